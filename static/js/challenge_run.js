// The challenge page's Run (templates/_partials/challenges_run_panel.html): run the code in the editor on the
// visible examples and on the custom input typed in the form, and show the reference's output beside
// the user's, with the difference. The code is read from #code, which the editor keeps in step.
(function () {
  const panel = document.getElementById("run-panel");
  const root = document.querySelector(".challenge");
  if (!panel || !root) return;
  const slug = root.dataset.slug;
  const form = document.getElementById("run-form");
  const button = document.getElementById("run");
  const status = document.getElementById("run-status");
  const withCustom = document.getElementById("run-with-custom");
  const formError = document.getElementById("run-form-error");
  const params = JSON.parse(document.getElementById("run-defaults-data").textContent);
  const inputKey = `kvprep:run-input:${slug}`;
  const field = (name) => document.getElementById(`run-${name}`);
  const errorOf = (name) => document.getElementById(`run-${name}-error`);

  // What was typed survives a reload (and a refused run: nothing here ever clears it).
  function saveInput() {
    const typed = { withCustom: withCustom.checked, values: {} };
    for (const p of params) {
      const el = field(p.name);
      typed.values[p.name] = p.kind === "bool" ? el.checked : el.value;
    }
    localStorage.setItem(inputKey, JSON.stringify(typed));
  }
  try {
    const saved = JSON.parse(localStorage.getItem(inputKey) || "null");
    if (saved && saved.values) {
      for (const p of params) {
        if (!(p.name in saved.values)) continue;
        if (p.kind === "bool") field(p.name).checked = Boolean(saved.values[p.name]);
        else field(p.name).value = String(saved.values[p.name]);
      }
      withCustom.checked = saved.withCustom !== false;
    }
  } catch (err) {
    localStorage.removeItem(inputKey); // unreadable: start from the defaults
  }
  form.addEventListener("input", saveInput);
  form.addEventListener("change", saveInput);

  document.getElementById("run-defaults").addEventListener("click", () => {
    for (const p of params) {
      if (p.kind === "bool") field(p.name).checked = Boolean(p.default);
      else field(p.name).value = String(p.default);
    }
    clearErrors();
    saveInput();
  });

  function clearErrors() {
    for (const p of params) {
      errorOf(p.name).hidden = true;
      errorOf(p.name).textContent = "";
      field(p.name).removeAttribute("aria-invalid");
    }
    formError.hidden = true;
    formError.textContent = "";
  }

  function showError(name, message) {
    const el = name && errorOf(name);
    if (el) {
      el.textContent = message;
      el.hidden = false;
      field(name).setAttribute("aria-invalid", "true");
    } else {
      formError.textContent = message;
      formError.hidden = false;
    }
  }

  // The custom input as numbers, or the problems with what was typed (each beside its field).
  function readInput() {
    const input = {};
    const problems = [];
    for (const p of params) {
      const el = field(p.name);
      if (p.kind === "bool") {
        input[p.name] = el.checked;
        continue;
      }
      const text = el.value.trim();
      const value = Number(text);
      if (text === "" || !Number.isFinite(value)) {
        problems.push([p.name, `${p.name} must be a number (the default is ${p.default})`]);
      } else {
        input[p.name] = value;
      }
    }
    return { input, problems };
  }

  const verdictText = (data, cases) => {
    const passed = cases.filter((c) => c.passed).length;
    if (data.verdict === "passed") return `Passed: ${passed}/${cases.length} cases match the reference.`;
    if (data.verdict === "failed") return `Failed: ${passed}/${cases.length} cases match the reference.`;
    return data.message || data.verdict;
  };

  function cell(row, label, text, className) {
    const td = document.createElement("td");
    td.dataset.label = label;
    if (className) td.className = className;
    if (text !== undefined) td.textContent = text;
    row.append(td);
    return td;
  }

  function difference(output) {
    if (output.passed) {
      const largest = output.max_abs_diff === null ? "" : `max |diff| ${output.max_abs_diff}, `;
      return `${largest}within ${output.tolerance}`;
    }
    const parts = [];
    if (output.max_abs_diff !== null) parts.push(`max |diff| ${output.max_abs_diff} (${output.tolerance})`);
    const first = output.first_mismatch;
    if (first) parts.push(`first at [${first.index.join(", ")}]: yours ${first.got}, reference ${first.expected}`);
    return parts.join("; ");
  }

  function caseLabel(row, c) {
    const td = cell(row, "Case");
    td.append(c.custom ? "Your input" : c.name);
    const input = document.createElement("span");
    input.className = "case-input";
    // The descriptions mark code with backticks, as Markdown does: show it as code, not as `marks`.
    for (const [i, part] of (c.description || "").split("`").entries()) {
      if (i % 2) {
        const code = document.createElement("code");
        code.textContent = part;
        input.append(code);
      } else {
        input.append(part);
      }
    }
    td.append(input);
    return td;
  }

  // A step-by-step trace (the scheduler's Run): each call of the script, the reference's answer
  // beside yours, the first row that differs marked.
  function traceRow(trace) {
    const row = document.createElement("tr");
    row.className = "trace-row";
    const td = document.createElement("td");
    td.colSpan = 5;
    const table = document.createElement("table");
    table.className = "run-trace";
    const head = table.createTHead().insertRow();
    for (const title of ["#", "Call", "Reference", "Yours"]) {
      const th = document.createElement("th");
      th.textContent = title;
      head.append(th);
    }
    const body = table.createTBody();
    trace.forEach((step, i) => {
      const tr = body.insertRow();
      if (step.differs) tr.className = step.first ? "differs first-difference" : "differs";
      for (const [label, text] of [["#", String(i + 1)], ["Call", step.step], ["Reference", step.expected], ["Yours", step.got]]) {
        cell(tr, label, text);
      }
    });
    td.append(table);
    row.append(td);
    return row;
  }

  function render(data) {
    const cases = [...data.examples, ...(data.custom ? [data.custom] : [])];
    const verdict = document.getElementById("run-verdict");
    verdict.className = `verdict-banner ${data.verdict}`;
    verdict.textContent = verdictText(data, cases);
    const rows = document.getElementById("run-rows");
    rows.replaceChildren();
    for (const c of cases) {
      const outputs = c.outputs.length ? c.outputs : [null];
      // The code raised: no output of its own, but the reference's is still worth seeing.
      const reference = c.outputs.length ? [] : c.reference || [];
      for (const output of outputs) {
        const row = document.createElement("tr");
        const ok = output ? output.passed : c.passed;
        row.className = ok ? "pass" : "fail";
        const label = caseLabel(row, c);
        if (output) {
          const what = document.createElement("span");
          what.className = "what";
          what.textContent = output.what;
          label.append(what);
        }
        cell(row, "Passed", ok ? "✓ yes" : "✗ no", "passed");
        const expected = cell(row, "Expected (reference)", output ? output.expected.text : reference.length ? undefined : "—", "values");
        for (const r of reference) {
          const part = document.createElement("span");
          part.className = "reference-output";
          const what = document.createElement("span");
          what.className = "what";
          what.textContent = r.what;
          part.append(what, r.expected.text);
          expected.append(part);
        }
        cell(row, "Your output", output ? output.got.text : "—", "values");
        const diff = cell(row, "Difference", output ? difference(output) : "");
        const message = output ? output.message : c.message;
        if (message) {
          const span = document.createElement("span");
          span.className = "message";
          span.textContent = message;
          diff.append(span);
        }
        rows.append(row);
        if (output && output.trace) rows.append(traceRow(output.trace));
      }
    }
    const out = document.getElementById("run-output");
    out.textContent = data.output || "";
    out.hidden = !data.output;
    document.getElementById("run-results").hidden = false;
  }

  // Each problem beside the input it names (FastAPI's loc ["body", "input", name], or a
  // ServiceError's field), else above the panel; the words are static/src/refusal.js's.
  function refused(response, body) {
    for (const problem of window.kvprepRefusal.problems(response, body)) {
      const field = problem.loc ? (problem.loc[1] === "input" ? problem.loc[2] : null) : problem.field;
      showError(field, problem.message || window.kvprepRefusal.sentence(response, body, "Run"));
    }
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors();
    const { input, problems } = readInput();
    if (withCustom.checked && problems.length) {
      for (const [name, message] of problems) showError(name, message);
      return;
    }
    button.disabled = true;
    status.textContent = "Running…";
    try {
      const response = await fetch(`/api/challenges/${slug}/run`, {
        method: "POST",
        headers: { "Content-Type": "application/json", Accept: "application/json" },
        body: JSON.stringify({ code: document.getElementById("code").value, input: withCustom.checked ? input : null }),
      });
      const body = await response.json().catch(() => ({}));
      if (response.ok) {
        render(body);
        status.textContent = `Ran in ${body.duration_ms} ms`;
      } else {
        refused(response, body);
        status.textContent = "";
      }
    } catch (err) {
      showError(null, `Could not reach the server: ${err.message}`);
      status.textContent = "";
    } finally {
      button.disabled = false;
    }
  });
})();
