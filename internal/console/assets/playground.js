// The playground's price: as fields change, asks the console for the
// price of what is filled in (the same check and price list as a run) and
// shows it. Optional: without it, "Update the price" does the same.
(function () {
  var form = document.getElementById("playground");
  var out = document.getElementById("price");
  if (!form || !out || !window.fetch) return;
  var timer, asked = 0;
  function refresh() {
    var q = new URLSearchParams();
    Array.prototype.forEach.call(form.elements, function (el) {
      if (!el.name || el.type === "file" || el.type === "hidden" || el.type === "submit") return;
      if (el.type === "checkbox") {
        if (el.checked) q.append(el.name, el.value);
        return;
      }
      q.append(el.name, el.value);
    });
    var n = ++asked;
    fetch(form.getAttribute("data-price") + "?" + q.toString(), { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (p) {
        if (!p || n !== asked) return;
        out.setAttribute("data-units", p.units || "");
        out.textContent = p.units ? p.units + " CU (" + p.usd + " USD)" : "No price yet: " + p.problem;
      })
      .catch(function () {});
  }
  function soon() {
    clearTimeout(timer);
    timer = setTimeout(refresh, 200);
  }
  form.addEventListener("input", soon);
  form.addEventListener("change", soon);
})();
