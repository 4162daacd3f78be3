{% raw %}
(function () {
  "use strict";
  // The drill-downs: HTML rendered (and escaped) by the report's templates, one per question,
  // stored as a gzip-compressed JSON list in base64 and unpacked when first needed.
  var drills = null;
  function loadDrills() {
    if (!drills) {
      var store = document.getElementById("qa-drills");
      var text = store ? store.textContent.trim() : "";
      if (!text) {
        drills = Promise.resolve([]);
      } else {
        var binary = atob(text), bytes = new Uint8Array(binary.length);
        for (var i = 0; i < binary.length; i += 1) bytes[i] = binary.charCodeAt(i);
        var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
        drills = new Response(stream).text().then(JSON.parse);
      }
    }
    return drills;
  }
  function fill(el) {
    var box = el.querySelector(".drill");
    if (!box || box.hasAttribute("data-filled")) return Promise.resolve();
    box.setAttribute("data-filled", "");
    return loadDrills().then(function (all) {
      box.innerHTML = all[Number(el.getAttribute("data-i"))] || "";
      el.setAttribute("data-loaded", "");
    });
  }
  document.addEventListener("toggle", function (event) {
    if (event.target.open && event.target.classList.contains("q")) fill(event.target);
  }, true);

  // Open the question a link points to (#q-N), also when the hash changes.
  function openTarget() {
    var id = location.hash.slice(1);
    if (!id) return;
    var el = document.getElementById(decodeURIComponent(id));
    if (el && el.tagName === "DETAILS") {
      fill(el);
      el.hidden = false;
      el.open = true;
      el.scrollIntoView();
    }
  }
  window.addEventListener("hashchange", openTarget);

  var list = document.getElementById("q-list");
  if (list) {
    var items = Array.prototype.slice.call(list.querySelectorAll("details.q"));
    var filter = document.getElementById("q-filter");
    var template = document.getElementById("q-template");
    var errors = document.getElementById("q-errors");
    var worse = document.getElementById("q-worse");
    var count = document.getElementById("q-count");
    var texts = null; // the text of each question and its drill-down, made on the first search
    var entities = { "&amp;": "&", "&lt;": "<", "&gt;": ">", "&#34;": "\"", "&#39;": "'" };
    var plain = function (html) {
      return html.replace(/<[^>]*>/g, " ").replace(/&(amp|lt|gt|#34|#39);/g, function (m) { return entities[m]; });
    };
    var searching = null;
    var apply = function () {
      var q = filter.value.trim().toLowerCase(), t = template.value, shown = 0;
      if (q && !texts) {
        if (!searching) {
          searching = loadDrills().then(function (all) {
            texts = items.map(function (el) {
              var i = Number(el.getAttribute("data-i"));
              return (el.querySelector("summary").textContent + " " + plain(all[i] || "")).toLowerCase();
            });
            apply();
          });
        }
        count.textContent = "searching…";
        return;
      }
      items.forEach(function (el, i) {
        var ok = (!q || texts[i].indexOf(q) !== -1) &&
          (!t || el.getAttribute("data-template") === t) &&
          (!errors.checked || el.classList.contains("has-error")) &&
          (!worse || !worse.checked || el.classList.contains("worse"));
        el.hidden = !ok;
        if (ok) shown += 1;
      });
      count.textContent = shown + " of " + items.length + " questions";
    };
    [filter, template, errors, worse].forEach(function (el) {
      if (el) { el.addEventListener("input", apply); el.addEventListener("change", apply); }
    });
    apply();

    var buttons = Array.prototype.slice.call(list.querySelectorAll(".qh button[data-sort]"));
    buttons.forEach(function (button) {
      button.addEventListener("click", function () {
        var key = "data-" + button.getAttribute("data-sort");
        var desc = button.classList.contains("asc");
        buttons.forEach(function (b) { b.classList.remove("asc", "desc"); });
        button.classList.add(desc ? "desc" : "asc");
        var rank = function (el) { return Number(el.getAttribute("data-rank")); };
        var sorted = items.slice().sort(function (a, b) {
          var x = a.getAttribute(key) || "", y = b.getAttribute(key) || "";
          if (x === "" || y === "") {
            if (x === y) return rank(a) - rank(b);
            return x === "" ? 1 : -1; // empty last
          }
          var nx = Number(x), ny = Number(y);
          var c = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y, undefined, { numeric: true });
          if (desc) c = -c;
          return c || rank(a) - rank(b);
        });
        sorted.forEach(function (el) { list.appendChild(el); });
      });
    });
  }
  openTarget();
  // Ready once the first frame with everything laid out has been drawn.
  requestAnimationFrame(function () {
    setTimeout(function () {
      window.__qaEvalReady = performance.now();
      document.body.setAttribute("data-ready", "true");
    }, 0);
  });
})();
{% endraw %}
