// qa-eval view: labelling and review by keyboard. Data is read from the DOM and sent as JSON;
// nothing received is ever written as HTML (textContent only).
(() => {
  "use strict";
  const token = document.querySelector('meta[name="qa-token"]').content;
  async function post(url, body) {
    const response = await fetch(url, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-QA-Token": token },
      body: JSON.stringify(body),
    });
    let data = {};
    try { data = await response.json(); } catch (e) { data = { error: response.statusText }; }
    if (!response.ok) throw new Error(data.error || response.statusText);
    return data;
  }
  const typing = (e) => e.target instanceof HTMLInputElement || e.target instanceof HTMLTextAreaElement;

  // ------------------------------------------------------------------ labelling
  const form = document.getElementById("label-form");
  if (form) {
    const status = document.getElementById("label-status");
    const note = document.getElementById("label-note");
    const number = document.getElementById("label-number");
    let busy = false;
    const again = form.dataset.replace === "1";
    async function save(value, clear) {
      if (busy) return;
      busy = true;
      status.textContent = "saving…";
      try {
        await post("/api/labels", {
          question_id: form.dataset.question, template_id: form.dataset.template,
          metric: form.dataset.metric, label: value, note: note.value,
          replace: again, clear: clear === true,
        });
        status.textContent = clear ? "cleared" : "saved";
        if (new URLSearchParams(window.location.search).has("pos")) window.location.assign(form.dataset.back);
        else window.location.reload();
      } catch (e) {
        status.textContent = "not saved: " + e.message;
        busy = false;
      }
    }
    const valueOf = (raw) => raw === "true" ? true : raw === "false" ? false : raw;
    form.querySelectorAll("button[data-label]").forEach((b) =>
      b.addEventListener("click", () => save(valueOf(b.dataset.label))));
    form.addEventListener("submit", (e) => e.preventDefault());
    document.addEventListener("keydown", (e) => {
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      if (e.key === "Enter" && (e.target === number || (e.target === note && number))) {
        e.preventDefault();
        const v = parseFloat(number.value);
        if (Number.isFinite(v)) save(v); else status.textContent = "type a number first";
        return;
      }
      if (e.key === "Escape" && typing(e)) { e.target.blur(); return; }
      if (typing(e)) return;
      if (e.key === "n") { e.preventDefault(); note.focus(); return; }
      if (e.key === "c" && again) { e.preventDefault(); save(null, true); return; }
      const mode = form.dataset.mode;
      if (mode === "pass/fail" && (e.key === "p" || e.key === "f")) { e.preventDefault(); save(e.key === "p"); }
      else if (mode === "class") {
        const b = form.querySelector(`button[data-key="${CSS.escape(e.key)}"]`);
        if (b) { e.preventDefault(); save(valueOf(b.dataset.label)); }
      } else if (mode === "number" && /^[0-9.]$/.test(e.key)) { number.focus(); }
    });
    if (note) note.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && form.dataset.mode !== "number") { e.preventDefault(); note.blur(); status.textContent = "note kept: now press the label key"; }
    });
  }

  // ------------------------------------------------------------------ review
  const review = document.getElementById("review");
  if (review) {
    const rows = Array.from(review.querySelectorAll(".review-row"));
    const count = document.getElementById("review-count");
    let current = 0;
    const focus = (i) => { current = Math.max(0, Math.min(rows.length - 1, i)); rows[current].focus(); };
    async function decide(row, decision) {
      const edit = row.querySelector(".review-edit").value;
      const badge = row.querySelector(".decision");
      try {
        await post("/api/review", { id: row.dataset.id, decision: decision, edit: edit });
        row.classList.remove("accept", "reject");
        if (decision) row.classList.add(decision);
        badge.textContent = decision || "undecided";
        count.textContent = `${rows.filter((r) => r.classList.contains("accept") || r.classList.contains("reject")).length} of ${rows.length} decided`;
      } catch (e) { badge.textContent = "not saved: " + e.message; }
    }
    rows.forEach((row, i) => {
      row.querySelectorAll("button[data-decision]").forEach((b) =>
        b.addEventListener("click", () => { current = i; decide(row, b.dataset.decision); }));
      row.addEventListener("focusin", () => { current = i; });
      const edit = row.querySelector(".review-edit");
      edit.addEventListener("keydown", (e) => {
        if (e.key === "Enter") { e.preventDefault(); decide(row, "accept"); row.focus(); }
        if (e.key === "Escape") { e.preventDefault(); row.focus(); }
      });
    });
    document.addEventListener("keydown", (e) => {
      if (typing(e) || e.ctrlKey || e.metaKey || e.altKey || !rows.length) return;
      const row = rows[current];
      if (e.key === "j") { e.preventDefault(); focus(current + 1); }
      else if (e.key === "k") { e.preventDefault(); focus(current - 1); }
      else if (e.key === "a") { e.preventDefault(); decide(row, "accept").then(() => focus(current + 1)); }
      else if (e.key === "r") { e.preventDefault(); decide(row, "reject").then(() => focus(current + 1)); }
      else if (e.key === "u") { e.preventDefault(); decide(row, ""); }
      else if (e.key === "e") { e.preventDefault(); row.querySelector(".review-edit").focus(); }
    });
    if (rows.length) focus(0);
  }
})();
