// Quiz keyboard shortcuts: 1-4 rate a revealed card (Again, Hard, Good, Easy); Ctrl+Enter submits an answer;
// Ctrl+Z (Cmd+Z) undoes the last rating, as in Anki, when not typing.
// A typed recall answer is kept in this browser until the server has it, like the mock's drafts.
(function () {
  const item = document.querySelector(".quiz-item");
  if (!item) return;

  const prefix = `kvprep:quiz:${item.dataset.quizId}:`;
  const key = `${prefix}${item.dataset.position}`;
  const recall = document.getElementById("recall-answer");
  // Any other draft of this quiz belongs to a card already answered: the page moved past it.
  for (let i = localStorage.length - 1; i >= 0; i--) {
    const name = localStorage.key(i);
    if (name && name.startsWith(prefix) && !(recall && name === key)) localStorage.removeItem(name);
  }
  if (recall) {
    const saved = localStorage.getItem(key);
    if (saved !== null && !recall.value) recall.value = saved;
    const keep = () => {
      localStorage.setItem(key, recall.value);
      document.getElementById("draft-status").textContent = "Draft kept in this browser";
    };
    recall.addEventListener("input", keep);
    // Text typed before this script ran (a slow load) had no input listener: keep it now, and
    // again as the page goes away, so a reload never loses it.
    if (recall.value) keep();
    window.addEventListener("pagehide", () => { if (recall.value) keep(); });
  }
  // Focus starts where the next key press belongs, so a quiz runs from the keyboard without Tab:
  // an open question on its first control (Space reveals a recall card, Space ticks the first
  // option, digits go into the number box), a revealed card on the strong answer (1-4 rate), and a
  // rated one on "Next question" (Enter moves on).
  const strong = document.getElementById("strong-answer");
  const next = document.getElementById("next");
  if (strong && item.dataset.state === "revealed") strong.focus();
  else if (next && item.dataset.state === "rated") next.focus();
  else if (item.dataset.state === "open") {
    const first = item.querySelector(".choice-form input[name=picked], .numeric-form input[name=value], #reveal");
    if (first && document.activeElement !== first) first.focus();
  }

  // Multiple choice: submitting with nothing ticked is most likely a slip, so ask first.
  const choiceForm = item.querySelector(".choice-form");
  if (choiceForm) {
    choiceForm.addEventListener("submit", (event) => {
      if (choiceForm.querySelector("input[name=picked]:checked")) return;
      if (!window.confirm("No option is ticked. Submit an empty answer? It counts as wrong.")) event.preventDefault();
    });
  }

  document.addEventListener("keydown", (event) => {
    const el = document.activeElement;
    // Typing in a text box or a menu; a ticked checkbox is not typing, so 1-4 still rate after it.
    const typing =
      el?.tagName === "TEXTAREA" || el?.tagName === "SELECT" ||
      (el?.tagName === "INPUT" && !["checkbox", "radio", "button", "submit"].includes(el.type));
    // Enter on a ticked (or unticked) option submits the choice, as Enter in a text box would.
    if (event.key === "Enter" && el?.type === "checkbox" && el.closest(".choice-form")) {
      event.preventDefault();
      el.closest("form").requestSubmit();
      return;
    }
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      const form = el?.closest("form");
      if (form) { event.preventDefault(); form.requestSubmit(); }
      return;
    }
    if (!typing && event.key.toLowerCase() === "z" && (event.ctrlKey || event.metaKey) && !event.shiftKey) {
      const undo = document.getElementById("undo");
      if (undo) { event.preventDefault(); undo.click(); }
      return;
    }
    if (typing || event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.key === " " && !["BUTTON", "A", "INPUT", "SUMMARY"].includes(el?.tagName)) {
      const reveal = document.getElementById("reveal");
      if (reveal) { event.preventDefault(); reveal.click(); }
      return;
    }
    const button = item.querySelector(`.rating-buttons button[data-key="${event.key}"]`);
    if (button) { event.preventDefault(); button.click(); }
  });
})();
