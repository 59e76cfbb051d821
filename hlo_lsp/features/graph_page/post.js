// How a page of hlo-lsp tells its host where to go: hloPost(message) posts it to the
// parent window (a browser frame) and, inside a VS Code webview, to the extension
// (acquireVsCodeApi may be called once per webview: the handle is kept).
function hloPost(message) {
  try { window.parent.postMessage(message, "*"); } catch (e) { /* no parent */ }
  if (typeof acquireVsCodeApi === "function") {
    try { (window.__vscode = window.__vscode || acquireVsCodeApi()).postMessage(message); } catch (e) { /* */ }
  }
}
