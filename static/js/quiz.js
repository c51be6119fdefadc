// Quiz keyboard shortcuts: 1-4 rate a revealed card (Again, Hard, Good, Easy); Ctrl+Enter submits an answer.
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
    recall.addEventListener("input", () => {
      localStorage.setItem(key, recall.value);
      document.getElementById("draft-status").textContent = "Draft kept in this browser";
    });
  }
  document.addEventListener("keydown", (event) => {
    const typing = ["TEXTAREA", "INPUT", "SELECT"].includes(document.activeElement?.tagName);
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      const form = document.activeElement?.closest("form");
      if (form) { event.preventDefault(); form.requestSubmit(); }
      return;
    }
    if (typing || event.ctrlKey || event.metaKey || event.altKey) return;
    const button = item.querySelector(`.rating-buttons button[data-key="${event.key}"]`);
    if (button) { event.preventDefault(); button.click(); }
  });
})();
