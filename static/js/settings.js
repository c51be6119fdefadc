// While a fit of the personal FSRS parameters is under way, ask every two seconds whether it is
// done, and reload the page (its figures and buttons) when it is.
(function () {
  "use strict";
  const section = document.getElementById("personal");
  if (!section || section.dataset.pending !== "true") return;
  const poll = async () => {
    try {
      const response = await fetch("/api/settings/scheduling", { headers: { Accept: "application/json" } });
      if (response.ok && !(await response.json()).fit_pending) {
        window.location.reload();
        return;
      }
    } catch (error) {
      // Offline for a moment: try again at the next tick.
    }
    window.setTimeout(poll, 2000);
  };
  window.setTimeout(poll, 2000);
})();
