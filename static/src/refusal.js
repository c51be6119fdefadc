// A refused request in words, for every script that sends a form or code to the API: the one
// reading of the app's error JSON (app/error_handlers.py), so each page says a refusal alike.
//   FastAPI's 422: {"detail": [{"loc": [...], "msg": ..., "type": ...}, ...]}, one problem a field;
//   a ServiceError: {"detail": message, "field": name} (field only when the error names one);
//   a 429: the message (which may say when to try again) and the Retry-After header.
// Bundled by esbuild into static/dist/refusal.js, which sets window.kvprepRefusal.

// The refusal's problems, each {loc, field, message}: `loc` is FastAPI's (null for a ServiceError),
// `field` the ServiceError's field name (null when it names none).
function problems(response, body) {
  const detail = body && body.detail;
  if (Array.isArray(detail)) {
    return detail.map((d) => ({ loc: d.loc || [], field: null, message: String(d.msg) }));
  }
  let message = detail ? String(detail) : "";
  if (response.status === 429) {
    const wait = response.headers.get("Retry-After");
    if (!/try again/.test(message)) message = `${message || "Slow down"}: try again in ${wait} s.`;
  }
  return [{ loc: null, field: (body && body.field) || null, message }];
}

// The refusal as one sentence; `what` names the request when the server said nothing ("Run").
function sentence(response, body, what) {
  const said = problems(response, body)
    .map((p) => p.message)
    .filter(Boolean)
    .join("; ");
  return said || `${what} refused (${response.status})`;
}

window.kvprepRefusal = { problems, sentence };
