// Finance's filter pickers (tenant, cost center): an input with a datalist whose options the
// server sends as the person types. Picking an option (or typing one exactly) applies the
// filter at once, as choosing in a select would: the filter forms listen for "change".
(() => {
  if (window.filterPickers) return;
  window.filterPickers = true;
  document.addEventListener("input", (event) => {
    const input = event.target;
    if (!(input instanceof HTMLInputElement) || !input.hasAttribute("data-picker")) return;
    const options = input.list ? [...input.list.options] : [];
    if (input.value && options.some((option) => option.value === input.value)) {
      input.dispatchEvent(new Event("change", { bubbles: true }));
    }
  });
})();
