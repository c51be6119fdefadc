// Writing and submitting code, shared by the challenge page and the mock interview's coding problem:
// the editor with a draft that survives a reload (kept in localStorage under the page's key), and
// the POST that queues a submission, with every refusal turned into a sentence to show.
(function () {
  // Mount CodeMirror on the textarea (or keep the plain textarea without it), starting from the
  // saved draft. options.key: the draft's localStorage key; options.status: an element that says
  // the draft is saved; options.onSubmit: Ctrl/Cmd+Enter in the editor.
  function editorWithDraft(textarea, { key, status, onSubmit } = {}) {
    const saved = localStorage.getItem(key);
    if (saved !== null) textarea.value = saved;
    const save = (text) => {
      localStorage.setItem(key, text);
      if (status) status.textContent = "Draft saved";
    };
    let editor = null;
    if (window.kvprepEditor) {
      editor = window.kvprepEditor.mount(textarea, { onChange: save, onSubmit });
    } else {
      textarea.addEventListener("input", () => save(textarea.value));
      textarea.addEventListener("keydown", (event) => {
        if (event.key === "Enter" && (event.ctrlKey || event.metaKey) && onSubmit) {
          event.preventDefault();
          onSubmit();
        }
      });
    }
    return {
      getValue: () => (editor ? editor.getValue() : textarea.value),
      // Replace the code; the draft follows (the editor's change handler saves it).
      setValue: (text) => {
        if (editor) editor.setValue(text);
        else save((textarea.value = text));
      },
      forgetDraft: () => localStorage.removeItem(key),
      focus: () => (editor ? editor.focus() : textarea.focus()),
    };
  }

  // POST the code as a submission. Resolves to { ok: true, body } (body: {id, status}) or
  // { ok: false, status, message }; rejects only when the server cannot be reached.
  async function submitCode(url, code) {
    const response = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify({ code }),
    });
    const body = await response.json().catch(() => ({}));
    if (response.ok) return { ok: true, body };
    return { ok: false, status: response.status, message: window.kvprepRefusal.sentence(response, body, "Submission") };
  }

  window.kvprepCoding = { editorWithDraft, submitCode };
})();
