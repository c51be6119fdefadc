// The challenge page: editor, drafts that survive reloads, submit, poll for the verdict, hints, solution.
(function () {
  const root = document.querySelector(".challenge");
  if (!root) return;
  const slug = root.dataset.slug;
  const draftKey = `kvprep:draft:${slug}`;
  const textarea = document.getElementById("code");
  const starter = JSON.parse(document.getElementById("starter-code").textContent);
  const draftStatus = document.getElementById("draft-status");

  const saved = localStorage.getItem(draftKey);
  if (saved !== null) textarea.value = saved;
  const saveDraft = (text) => {
    localStorage.setItem(draftKey, text);
    draftStatus.textContent = "Draft saved";
  };
  let editor = null;
  if (window.kvprepEditor) {
    editor = window.kvprepEditor.mount(textarea, { onChange: saveDraft });
  } else {
    textarea.addEventListener("input", () => saveDraft(textarea.value));
  }
  const getCode = () => (editor ? editor.getValue() : textarea.value);

  document.getElementById("reset-code").addEventListener("click", () => {
    if (editor) editor.setValue(starter); else textarea.value = starter;
    localStorage.removeItem(draftKey);
    draftStatus.textContent = "Starter code restored";
  });

  // Hints, one at a time.
  const nextHint = document.getElementById("next-hint");
  nextHint.addEventListener("click", () => {
    const hidden = root.querySelectorAll(".hint[hidden]");
    if (hidden.length) hidden[0].hidden = false;
    if (hidden.length <= 1) nextHint.hidden = true;
  });

  const submit = document.getElementById("submit");
  const { show, grading, poll } = window.kvprepVerdict;

  function render(data) {
    window.kvprepVerdict.render(data, { heading: "Likely cause" });
    addHistory(data);
    unlockSolution();
  }

  function addHistory(data) {
    const list = document.getElementById("history");
    document.getElementById("no-attempts")?.remove();
    const li = document.createElement("li");
    li.className = data.verdict === "passed" ? "pass" : "fail";
    const badge = document.createElement("span");
    badge.className = `badge ${data.verdict}`;
    badge.textContent = data.verdict;
    li.append(badge, ` ${data.duration_ms} ms`);
    list.prepend(li);
  }

  function unlockSolution() {
    document.getElementById("solution-locked").hidden = true;
    document.getElementById("show-solution").hidden = false;
  }

  submit.addEventListener("click", async () => {
    submit.disabled = true;
    grading();
    try {
      const response = await fetch(`/api/challenges/${slug}/submissions`, {
        method: "POST",
        headers: { "Content-Type": "application/json", Accept: "application/json" },
        body: JSON.stringify({ code: getCode() }),
      });
      const body = await response.json().catch(() => ({}));
      if (response.status === 429) {
        show(`Slow down: try again in ${response.headers.get("Retry-After")} s.`, "error");
      } else if (!response.ok) {
        show(body.detail ? String(body.detail) : `Submission refused (${response.status})`, "error");
      } else {
        render(await poll(body.id));
      }
    } catch (err) {
      show(`Could not reach the grader: ${err.message}`, "error");
    } finally {
      submit.disabled = false;
    }
  });

  document.getElementById("show-solution").addEventListener("click", async (event) => {
    const response = await fetch(`/api/challenges/${slug}/solution`);
    if (!response.ok) return;
    const pre = document.getElementById("solution");
    pre.textContent = (await response.json()).solution;
    pre.hidden = false;
    event.target.hidden = true;
  });
})();
