// Copy buttons: <button data-copy="ID"> copies the text of the element #ID (a command to paste
// into a terminal). Delegated, so buttons swapped in by htmx work too. Without the Clipboard
// API (plain http), the text is selected for Ctrl+C instead.
document.addEventListener("click", (event) => {
  const button = event.target.closest("button[data-copy]");
  if (!button) return;
  const source = document.getElementById(button.dataset.copy);
  if (!source) return;
  const text = source.innerText.trim();
  const label = button.querySelector(".copy-label");
  const show = (words) => {
    if (label) label.textContent = words;
    button.setAttribute("data-copied", words === "Copied" ? "true" : "false");
  };
  const select = () => {
    const range = document.createRange();
    range.selectNodeContents(source);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    show("Selected: press Ctrl+C");
  };
  if (!navigator.clipboard) return select();
  navigator.clipboard.writeText(text).then(() => show("Copied"), select);
});
