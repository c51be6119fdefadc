// A grading verdict, shared by the challenge page and the mock interview's coding problem
// (templates/_partials/challenges_verdict.html): the banner, a summary line ("17/19 passed"), the per-test
// list with repeated failures folded together, the diagnosis, the output, and long-polling
// /api/submissions/{id}?wait=25. Works on the page's #results, #verdict, #verdict-summary, #tests,
// #diagnosis and (where there is one) #output.
(function () {
  const labels = {
    passed: "Passed: every test matches the reference.",
    failed: "Failed: see which test and why below.",
    error: "Error: the code could not run.",
    timeout: "Timeout: the code ran past the time limit.",
    memory_limit: "Memory limit: the code used too much memory.",
  };
  const el = (id) => document.getElementById(id);
  const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;

  // "17/19 passed", or "" when no test ran (the code could not load).
  function summaryText(tests) {
    if (!tests || !tests.length) return "";
    return `${tests.filter((t) => t.passed).length}/${tests.length} passed`;
  }

  // The tests in battery order, with every failure whose message an earlier failure already gave
  // folded into that earlier one: one line per distinct mistake, with how many tests it broke.
  function fold(tests) {
    const rows = [];
    const byMessage = new Map();
    for (const t of tests || []) {
      const earlier = !t.passed && t.message ? byMessage.get(t.message) : undefined;
      if (earlier) {
        earlier.names.push(t.name);
        continue;
      }
      const row = { passed: t.passed, message: t.message, names: [t.name] };
      if (!t.passed && t.message) byMessage.set(t.message, row);
      rows.push(row);
    }
    return rows;
  }

  // Fill a list (the verdict's #tests, or a past attempt's) with the folded tests.
  function renderTests(list, tests) {
    list.replaceChildren();
    for (const row of fold(tests)) {
      const li = document.createElement("li");
      li.className = row.passed ? "pass" : "fail";
      li.append(`${row.passed ? "✓" : "✗"} ${row.names[0]}`);
      if (row.names.length > 1) {
        li.classList.add("folded");
        const count = document.createElement("span");
        count.className = "repeat-count";
        count.textContent = `and ${plural(row.names.length - 1, "more test")}, the same way`;
        li.append(" ", count);
      }
      if (row.message) {
        const msg = document.createElement("span");
        msg.className = "message";
        msg.textContent = row.message;
        li.appendChild(msg);
      }
      if (row.names.length > 1) {
        // The other tests' names, folded away: the message is what matters.
        const also = document.createElement("details");
        also.className = "also-failed";
        const summary = document.createElement("summary");
        summary.textContent = `Which ${plural(row.names.length - 1, "other test")}`;
        // Not a nested list: "#tests li" stays one item per line of the verdict.
        const names = document.createElement("div");
        names.className = "other-tests";
        for (const name of row.names.slice(1)) {
          const item = document.createElement("p");
          item.textContent = name;
          names.appendChild(item);
        }
        also.append(summary, names);
        li.appendChild(also);
      }
      list.appendChild(li);
    }
  }

  // The banner alone: "Grading…", a refusal, or the verdict.
  function show(text, cls) {
    el("results").hidden = false;
    const verdict = el("verdict");
    verdict.className = `verdict-banner ${cls}`;
    verdict.textContent = text;
    const summary = el("verdict-summary");
    if (summary) summary.hidden = true;
  }

  // A submission is on its way: say so and clear the previous verdict's tests and diagnosis.
  function grading() {
    show("Grading…", "grading");
    el("tests").replaceChildren();
    el("diagnosis").replaceChildren();
    const output = el("output");
    if (output) output.hidden = true;
  }

  // A finished submission. options.heading: a heading put above the diagnosis when there is one.
  function render(data, options = {}) {
    show(labels[data.verdict] || data.verdict, data.verdict);
    const summary = el("verdict-summary");
    if (summary) {
      summary.textContent = summaryText(data.tests);
      summary.hidden = !summary.textContent;
    }
    renderTests(el("tests"), data.tests);
    const diagnosis = el("diagnosis");
    diagnosis.replaceChildren();
    if (options.heading && (data.diagnosis || []).length) {
      const heading = document.createElement("h3");
      heading.textContent = options.heading;
      diagnosis.appendChild(heading);
    }
    for (const d of data.diagnosis || []) {
      const p = document.createElement("p");
      p.className = "diagnosis";
      p.textContent = d;
      diagnosis.appendChild(p);
    }
    const output = el("output");
    if (output) {
      output.hidden = !data.output;
      output.textContent = data.output || "";
    }
  }

  // After a Submit: bring the verdict into view and move focus to it, so keyboard and screen-reader
  // users land on it and nobody is left looking at an unchanged button.
  function reveal() {
    const results = el("results");
    results.scrollIntoView({ block: "nearest" });
    results.focus({ preventScroll: true });
  }

  // Ask for the submission with a long-poll: the server answers the moment the verdict is stored,
  // or after 25 s with the submission still grading (then ask again).
  async function poll(id) {
    for (;;) {
      const response = await fetch(`/api/submissions/${id}?wait=25`, { headers: { Accept: "application/json" } });
      if (!response.ok) throw new Error(`status ${response.status}`);
      const data = await response.json();
      if (data.status === "done") return data;
    }
  }

  window.kvprepVerdict = { labels, show, grading, render, reveal, renderTests, summaryText, poll };
})();
