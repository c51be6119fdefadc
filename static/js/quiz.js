// Quiz keyboard shortcuts: 1-4 rate a revealed card (Again, Hard, Good, Easy); Ctrl+Enter submits an answer.
(function () {
  const item = document.querySelector(".quiz-item");
  if (!item) return;
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
