// Progressive reveal on a card page: the answer, then one follow-up at a time.
(function () {
  const reveal = document.getElementById("reveal-answer");
  const answer = document.getElementById("answer");
  if (!reveal || !answer) return;
  reveal.addEventListener("click", () => {
    answer.hidden = false;
    reveal.hidden = true;
    answer.querySelector("h2")?.focus?.();
  });
  document.querySelectorAll(".reveal-fu").forEach((button) => {
    button.addEventListener("click", () => {
      button.nextElementSibling.hidden = false;
      button.hidden = true;
    });
  });
  const next = document.getElementById("next-follow-up");
  if (next) {
    next.addEventListener("click", () => {
      const hidden = answer.querySelectorAll(".follow-up[hidden]");
      if (hidden.length) hidden[0].hidden = false;
      if (hidden.length <= 1) next.hidden = true;
    });
  }
})();
