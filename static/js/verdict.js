// A grading verdict, shared by the challenge page and the mock interview's coding problem: the banner,
// the per-test list with messages, the diagnosis, the output, and long-polling /api/submissions/{id}?wait=25.
// Works on the page's #results, #verdict, #tests, #diagnosis and (where there is one) #output.
(function () {
  const labels = {
    passed: "Passed: every test matches the reference.",
    failed: "Failed: see which test and why below.",
    error: "Error: the code could not run.",
    timeout: "Timeout: the code ran past the time limit.",
    memory_limit: "Memory limit: the code used too much memory.",
  };
  const el = (id) => document.getElementById(id);

  // The banner alone: "Grading…", a refusal, or the verdict.
  function show(text, cls) {
    el("results").hidden = false;
    const verdict = el("verdict");
    verdict.className = `verdict-banner ${cls}`;
    verdict.textContent = text;
  }

  // A submission is on its way: say so and clear the previous verdict's tests and diagnosis.
  function grading() {
    show("Grading…", "grading");
    el("tests").replaceChildren();
    el("diagnosis").replaceChildren();
  }

  // A finished submission. options.heading: a heading put above the diagnosis when there is one.
  function render(data, options = {}) {
    show(labels[data.verdict] || data.verdict, data.verdict);
    const tests = el("tests");
    tests.replaceChildren();
    for (const t of data.tests || []) {
      const li = document.createElement("li");
      li.className = t.passed ? "pass" : "fail";
      li.textContent = `${t.passed ? "✓" : "✗"} ${t.name}`;
      if (t.message) {
        const msg = document.createElement("span");
        msg.className = "message";
        msg.textContent = t.message;
        li.appendChild(msg);
      }
      tests.appendChild(li);
    }
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

  window.kvprepVerdict = { show, grading, render, poll };
})();
