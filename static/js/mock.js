// The running mock interview: a countdown that follows the server's clock (so it survives a reload
// and agrees across tabs), drafts that survive a reload, and the coding problem's editor and verdicts.
// The server decides: when the countdown reaches zero the page asks it, and it closes the interview.
(function () {
  const root = document.getElementById("mock");
  if (!root || !root.classList.contains("mock-run")) return;
  const id = root.dataset.mockId;
  const clock = document.getElementById("clock");
  const timeUp = document.getElementById("time-up");
  let deadline = Date.parse(root.dataset.deadline);
  // Server time minus this browser's time: the countdown runs on the server's clock.
  let skew = Date.parse(root.dataset.now) - Date.now();
  let closing = false;

  const format = (ms) => {
    const s = Math.max(0, Math.ceil(ms / 1000));
    return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
  };
  const remaining = () => deadline - (Date.now() + skew);
  const controls = () => root.querySelectorAll("button, textarea, input, select");

  function tick() {
    const left = remaining();
    clock.textContent = format(left);
    clock.classList.toggle("low", left <= 60_000);
    document.title = `${format(left)} left · Mock interview · kvprep`;
    if (left <= 0 && !closing) timeIsUp();
  }

  // Where the interview stands on the server: another tab may have answered, or the time run out.
  async function sync() {
    const sent = Date.now();
    const response = await fetch(`/api/mock/${id}`, { headers: { Accept: "application/json" } });
    if (!response.ok) throw new Error(`status ${response.status}`);
    const state = await response.json();
    skew = Date.parse(state.now) + (Date.now() - sent) / 2 - Date.now();
    deadline = Date.parse(state.deadline);
    const current = state.current;
    const moved =
      current && (String(current.position) !== root.dataset.position || current.step !== root.dataset.step);
    if (state.status !== "running" || moved) location.reload();
    return state;
  }

  async function timeIsUp() {
    closing = true;
    timeUp.hidden = false;
    controls().forEach((el) => { el.disabled = true; });
    try {
      const state = await sync();
      if (state.status === "running") {
        // This browser's clock ran ahead of the server's: carry on.
        closing = false;
        timeUp.hidden = true;
        controls().forEach((el) => { el.disabled = false; });
      }
    } catch (err) {
      setTimeout(() => location.reload(), 2000);
    }
  }

  tick();
  setInterval(tick, 250);
  setInterval(() => sync().catch(() => {}), 15_000);
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible") sync().catch(() => {});
  });

  document.getElementById("finish-form").addEventListener("submit", (event) => {
    if (!window.confirm("End the interview now? The clock stops and you go on to score your answers.")) {
      event.preventDefault();
    }
  });

  // A typed answer survives a reload (and a crash, and a refusal) until the server has taken it: a
  // draft is dropped only when a later page shows the interview has moved past its question.
  const form = document.getElementById("answer-form");
  const answer = document.getElementById("answer");
  const draftStatus = document.getElementById("draft-status");
  const prefix = `kvprep:mock:${id}:`;
  const key = `${prefix}${root.dataset.position}:${root.dataset.step}`;
  for (let i = localStorage.length - 1; i >= 0; i--) {
    const name = localStorage.key(i);
    if (name && name.startsWith(prefix) && name !== key && name !== `${prefix}code`) {
      localStorage.removeItem(name);
    }
  }
  if (form && answer) {
    const saved = localStorage.getItem(key);
    if (saved !== null && !answer.value) answer.value = saved;
    // Text already in the box (a refused answer sent back by the server, or typed before this
    // script ran) is a draft too: kept now, so that a reload cannot lose it.
    const keep = () => {
      if (answer.value) localStorage.setItem(key, answer.value);
    };
    keep();
    const limit = Number(answer.dataset.maxChars || 0);
    const counter = document.getElementById("answer-count");
    const error = document.getElementById("answer-error");
    // As the server counts: code points, after trimming, one per line break.
    const length = () => [...answer.value.trim()].length;
    const count = () => {
      if (!counter || !limit) return;
      const n = length();
      counter.textContent = `${n.toLocaleString("en-US")} / ${limit.toLocaleString("en-US")} characters`;
      counter.classList.toggle("over", n > limit);
      if (n <= limit && error) error.hidden = true;
    };
    count();
    answer.addEventListener("input", () => {
      localStorage.setItem(key, answer.value);
      draftStatus.textContent = "Draft kept in this browser";
      count();
    });
    answer.focus();
    let sent = false;
    form.addEventListener("submit", (event) => {
      if (sent || closing) {
        event.preventDefault();
        return;
      }
      const passing = event.submitter && event.submitter.name === "skip";
      if (!passing && limit && length() > limit) {
        event.preventDefault();
        keep();
        const over = (length() - limit).toLocaleString("en-US");
        error.textContent =
          `This answer is ${over} characters over the limit of ${limit.toLocaleString("en-US")}. ` +
          "Shorten it and send it again: your text is kept.";
        error.hidden = false;
        answer.focus();
        return;
      }
      sent = true;
    });
  }

  const coding = root.querySelector(".mock-coding");
  if (coding) setUpCoding();

  function setUpCoding() {
    const submit = document.getElementById("submit-code");
    const editor = window.kvprepCoding.editorWithDraft(document.getElementById("code"), {
      key: `kvprep:mock:${id}:code`,
      onSubmit: () => {
        if (!submit.disabled) submit.click();
      },
    });

    const attempts = document.getElementById("attempts");
    const { show, grading, render, reveal, poll } = window.kvprepVerdict;

    function attemptItem(data) {
      const li = document.createElement("li");
      li.dataset.id = data.id;
      const badge = document.createElement("span");
      const label = data.verdict || data.status;
      badge.className = `badge ${data.verdict || "queued"}`;
      badge.textContent = label;
      li.className = data.verdict ? (data.verdict === "passed" ? "pass" : "fail") : "";
      li.append(badge);
      if (data.duration_ms !== undefined) li.append(` ${data.duration_ms} ms`);
      return li;
    }

    function track(data) {
      document.getElementById("no-attempts")?.remove();
      const li = attemptItem(data);
      const old = attempts.querySelector(`li[data-id="${data.id}"]`);
      if (old) old.replaceWith(li); else attempts.prepend(li);
    }

    // Submissions still grading when the page was (re)loaded.
    const existing = JSON.parse(document.getElementById("submissions-data").textContent);
    attempts.replaceChildren(...existing.slice().reverse().map((s) => attemptItem(s)));
    if (!existing.length) {
      const li = document.createElement("li");
      li.className = "muted";
      li.id = "no-attempts";
      li.textContent = "No submission yet.";
      attempts.append(li);
    }
    for (const s of existing) {
      if (s.status !== "done") poll(s.id).then(track).catch(() => {});
    }

    submit.addEventListener("click", async () => {
      submit.disabled = true;
      grading();
      try {
        const sent = await window.kvprepCoding.submitCode(`/api/mock/${id}/submissions`, editor.getValue());
        if (!sent.ok) {
          show(sent.message, "error");
          if (sent.status === 409) timeIsUp(); // the interview is over
        } else {
          track(sent.body);
          const data = await poll(sent.body.id);
          track(data);
          render(data);
        }
      } catch (err) {
        show(`Could not reach the grader: ${err.message}`, "error");
      } finally {
        reveal();
        if (!closing) submit.disabled = false;
      }
    });
  }
})();
