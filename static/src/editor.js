// CodeMirror 6 with Python mode, exposed as window.kvprepEditor.mount(textarea).
// The textarea stays the source of truth for forms and for the no-JS fallback.
import { EditorView, basicSetup } from "codemirror";
import { keymap } from "@codemirror/view";
import { indentWithTab } from "@codemirror/commands";
import { python } from "@codemirror/lang-python";

function mount(textarea, { onChange } = {}) {
  const view = new EditorView({
    doc: textarea.value,
    extensions: [
      basicSetup,
      keymap.of([indentWithTab]),
      python(),
      EditorView.updateListener.of((update) => {
        if (!update.docChanged) return;
        textarea.value = view.state.doc.toString();
        if (onChange) onChange(textarea.value);
      }),
    ],
  });
  textarea.hidden = true;
  textarea.parentNode.insertBefore(view.dom, textarea);
  return {
    view,
    getValue: () => view.state.doc.toString(),
    setValue: (text) => view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } }),
  };
}

window.kvprepEditor = { mount };
