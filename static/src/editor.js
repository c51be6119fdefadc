// CodeMirror 6 with Python mode, exposed as window.kvprepEditor.mount(textarea).
// Indentation is 4 spaces, as in the starters (PEP 8): Enter after a `def ...:` line indents by
// 4, Tab indents the line or selection by 4, Shift+Tab dedents. Ctrl/Cmd+Enter calls onSubmit.
// The textarea stays the source of truth for forms and for the no-JS fallback.
// The editor lives in a shadow root: there CodeMirror styles itself with constructed
// stylesheets (adoptedStyleSheets) instead of a <style> element, so the pages'
// Content-Security-Policy (style-src 'self', no inline styles) holds with the editor too.
import { EditorView, basicSetup } from "codemirror";
import { keymap } from "@codemirror/view";
import { EditorState, Prec } from "@codemirror/state";
import { indentUnit } from "@codemirror/language";
import { indentWithTab } from "@codemirror/commands";
import { python } from "@codemirror/lang-python";

// What app.css gave .cm-editor before the shadow root hid it from the page's stylesheets.
const sizing = EditorView.theme({
  "&": { minHeight: "320px", maxHeight: "70vh", backgroundColor: "#fff" },
  ".cm-scroller": { overflow: "auto", fontFamily: 'ui-monospace, "DejaVu Sans Mono", monospace' },
});

// Ctrl/Cmd+Enter submits. Highest precedence: the default keymap binds Mod-Enter to
// "insert a blank line", which would win otherwise.
const submitKey = (onSubmit) =>
  Prec.highest(
    keymap.of([
      {
        key: "Mod-Enter",
        run: () => {
          if (onSubmit) onSubmit();
          return Boolean(onSubmit);
        },
      },
    ]),
  );

function mount(textarea, { onChange, onSubmit } = {}) {
  const host = document.createElement("div");
  host.className = "editor-host";
  const root = host.attachShadow({ mode: "open" });
  const view = new EditorView({
    doc: textarea.value,
    root,
    extensions: [
      basicSetup,
      sizing,
      indentUnit.of("    "),
      EditorState.tabSize.of(4),
      submitKey(onSubmit),
      keymap.of([indentWithTab]),
      python(),
      EditorView.updateListener.of((update) => {
        if (!update.docChanged) return;
        textarea.value = view.state.doc.toString();
        if (onChange) onChange(textarea.value);
      }),
    ],
  });
  root.appendChild(view.dom);
  textarea.hidden = true;
  textarea.parentNode.insertBefore(host, textarea);
  return {
    view,
    getValue: () => view.state.doc.toString(),
    setValue: (text) => view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } }),
    focus: () => view.focus(),
  };
}

window.kvprepEditor = { mount };
