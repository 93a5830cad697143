// Copy buttons: the only script of the console, and optional: the value is
// on the page to select by hand without it.
document.addEventListener("click", function (e) {
  var b = e.target.closest("[data-copy]");
  if (!b || !navigator.clipboard) return;
  var el = document.getElementById(b.getAttribute("data-copy"));
  if (!el) return;
  navigator.clipboard.writeText(el.textContent.trim()).then(function () {
    var was = b.textContent;
    b.textContent = "Copied";
    setTimeout(function () { b.textContent = was; }, 1500);
  });
});
