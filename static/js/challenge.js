// The challenge page: the editor and its draft, Submit (button or Ctrl/Cmd+Enter), the verdict
// (the last one again after a reload), past attempts with their code, hints, the solution.
(function () {
  const root = document.querySelector(".challenge");
  if (!root) return;
  const slug = root.dataset.slug;
  const textarea = document.getElementById("code");
  const starter = JSON.parse(document.getElementById("starter-code").textContent);
  const draftStatus = document.getElementById("draft-status");
  const submit = document.getElementById("submit");
  const { show, grading, reveal, poll, labels, renderTests, summaryText } = window.kvprepVerdict;

  const editor = window.kvprepCoding.editorWithDraft(textarea, {
    key: `kvprep:draft:${slug}`,
    status: draftStatus,
    onSubmit: () => {
      if (!submit.disabled) submit.click();
    },
  });
  // For the Run panel (static/js/challenge_run.js): the code as it stands in the editor.
  window.kvprepChallenge = { slug, getCode: editor.getValue, setCode: editor.setValue };

  document.getElementById("reset-code").addEventListener("click", () => {
    if (editor.getValue() !== starter && !window.confirm("Replace your code with the starter code? Your draft is lost.")) {
      return;
    }
    editor.setValue(starter);
    editor.forgetDraft();
    draftStatus.textContent = "Starter code restored";
  });

  // Hints, one at a time. How many of the challenge's own hints were shown is kept on this browser,
  // so a reload does not hide them again (a mistake's hints come back with the verdict shown again).
  const nextHint = document.getElementById("next-hint");
  const hintKey = `kvprep:hints:${slug}`;
  const ownHints = () => [...root.querySelectorAll(".hint:not(.mistake-hint)")];
  const shownBefore = Number.parseInt(localStorage.getItem(hintKey) || "0", 10) || 0;
  ownHints().slice(0, shownBefore).forEach((h) => { h.hidden = false; });
  if (!root.querySelector(".hint[hidden]")) nextHint.hidden = true;
  nextHint.addEventListener("click", () => {
    const hidden = root.querySelectorAll(".hint[hidden]");
    if (hidden.length) hidden[0].hidden = false;
    if (hidden.length <= 1) nextHint.hidden = true;
    localStorage.setItem(hintKey, String(ownHints().filter((h) => !h.hidden).length));
  });

  // A failed verdict that names a known mistake carries its hint (mistake_hints, one per named
  // mistake, in the diagnosis's order): the first is shown at the top of the hints, the others wait
  // behind "Show a hint" ahead of the generic ones. Any other verdict clears them.
  const mistakeHints = document.getElementById("mistake-hints");
  function showMistakeHints(data) {
    mistakeHints.replaceChildren();
    (data.mistake_hints || []).forEach((h, i) => {
      const div = document.createElement("div");
      div.className = "hint mistake-hint";
      div.dataset.mistake = h.mistake;
      div.hidden = i > 0;
      const label = document.createElement("strong");
      label.textContent = "For the mistake your last submission made: ";
      div.append(label, h.hint);
      mistakeHints.appendChild(div);
    });
    nextHint.hidden = !root.querySelector(".hint[hidden]");
    if (!mistakeHints.firstChild) return;
    // The verdict is where the person is looking; the hints sit in the other column (above it on
    // a phone): a link under the likely cause takes them there.
    const link = document.createElement("a");
    link.href = "#mistake-hints";
    link.id = "mistake-hint-link";
    link.textContent = "A hint for this mistake";
    link.addEventListener("click", (event) => {
      event.preventDefault();
      mistakeHints.scrollIntoView({ block: "center" });
    });
    const p = document.createElement("p");
    p.append(link);
    document.getElementById("diagnosis").appendChild(p);
  }

  const render = (data) => {
    window.kvprepVerdict.render(data, { heading: "Likely cause" });
    showMistakeHints(data);
  };

  // The attempts list: one line per submission, newest first (as templates/_partials/challenges_attempt.html).
  const history = document.getElementById("history");
  const when = (iso) => iso.slice(0, 16).replace("T", " ");

  function attemptItem(data, createdAt) {
    const li = document.createElement("li");
    li.className = `attempt ${data.verdict ? (data.verdict === "passed" ? "pass" : "fail") : ""}`.trim();
    li.dataset.id = data.id;
    const open = document.createElement("button");
    open.type = "button";
    open.className = "attempt-open";
    open.dataset.id = data.id;
    open.dataset.when = createdAt;
    const badge = document.createElement("span");
    badge.className = `badge ${data.verdict || "queued"}`;
    badge.textContent = data.verdict || data.status;
    open.append(badge);
    const score = summaryText(data.tests);
    if (score) {
      const span = document.createElement("span");
      span.className = "attempt-score";
      span.textContent = score;
      open.append(" ", span);
    }
    const time = document.createElement("span");
    time.className = "muted";
    time.textContent = createdAt;
    open.append(" ", time);
    li.append(open);
    return li;
  }

  function track(data) {
    document.getElementById("no-attempts")?.remove();
    const old = history.querySelector(`li[data-id="${data.id}"]`);
    const createdAt = old ? old.querySelector(".attempt-open").dataset.when : when(new Date().toISOString());
    const li = attemptItem(data, createdAt);
    if (old) old.replaceWith(li);
    else history.prepend(li);
  }

  function unlockSolution() {
    document.getElementById("solution-locked").hidden = true;
    document.getElementById("show-solution").hidden = false;
  }

  async function waitAndShow(id) {
    const data = await poll(id);
    render(data);
    track(data);
  }

  submit.addEventListener("click", async () => {
    submit.disabled = true;
    grading();
    try {
      const sent = await window.kvprepCoding.submitCode(`/api/challenges/${slug}/submissions`, editor.getValue());
      if (!sent.ok) {
        show(sent.message, "error");
        return;
      }
      track(sent.body);
      unlockSolution();
      await waitAndShow(sent.body.id);
    } catch (err) {
      show(`Could not reach the grader: ${err.message}`, "error");
    } finally {
      reveal();
      submit.disabled = false;
    }
  });

  // After a reload: the latest attempt's verdict again, or wait for it if it is still grading.
  const last = JSON.parse(document.getElementById("last-submission").textContent);
  if (last && last.status === "done") {
    render(last);
  } else if (last) {
    grading();
    waitAndShow(last.id).catch((err) => show(`Could not reach the grader: ${err.message}`, "error"));
  }

  // A past attempt: its code (read-only) and its verdict, and a way back into the editor.
  const panel = document.getElementById("past-attempt");
  const pastCode = document.getElementById("past-attempt-code");
  const pastVerdict = document.getElementById("past-attempt-verdict");
  let shown = null;

  async function openAttempt(button) {
    const id = button.dataset.id;
    const ask = (url) =>
      fetch(url, { headers: { Accept: "application/json" } }).then((r) => {
        if (!r.ok) throw new Error(`status ${r.status}`);
        return r.json();
      });
    try {
      const [verdict, code] = await Promise.all([ask(`/api/submissions/${id}`), ask(`/api/submissions/${id}/code`)]);
      shown = code.code;
      document.getElementById("past-attempt-when").textContent = button.dataset.when;
      const score = summaryText(verdict.tests);
      pastVerdict.className = `past-attempt-verdict ${verdict.verdict || "grading"}`;
      pastVerdict.textContent = verdict.status === "done"
        ? `${labels[verdict.verdict] || verdict.verdict}${score ? ` ${score}.` : ""}`
        : "Still grading.";
      renderTests(document.getElementById("past-attempt-tests"), verdict.tests);
      pastCode.textContent = code.code;
      panel.hidden = false;
      panel.scrollIntoView({ block: "nearest" });
    } catch (err) {
      show(`Could not open that attempt: ${err.message}`, "error");
    }
  }

  history.addEventListener("click", (event) => {
    const button = event.target.closest(".attempt-open");
    if (button) openAttempt(button);
  });
  document.getElementById("load-attempt").addEventListener("click", () => {
    if (shown === null) return;
    editor.setValue(shown);
    draftStatus.textContent = "Past attempt loaded into the editor";
    panel.hidden = true;
    editor.focus();
  });
  document.getElementById("close-attempt").addEventListener("click", () => {
    panel.hidden = true;
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
