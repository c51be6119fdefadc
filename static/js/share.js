// The share panel's Copy link button: the clipboard when the browser allows it, else the text is
// selected so that Ctrl+C (or a long press) copies it.
(function () {
  const button = document.getElementById("copy-link");
  if (!button) return;
  const field = document.getElementById(button.dataset.target);
  const status = document.getElementById("copy-status");
  button.addEventListener("click", async () => {
    field.select();
    try {
      await navigator.clipboard.writeText(field.value);
      status.textContent = "Copied.";
    } catch (err) {
      status.textContent = "Selected: press Ctrl+C (Cmd+C) to copy.";
    }
  });
})();
