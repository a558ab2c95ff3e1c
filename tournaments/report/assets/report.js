
(function () {
  function key(row, index) {
    var cell = row.cells[index];
    var text = cell ? (cell.dataset.sort !== undefined ? cell.dataset.sort : cell.textContent) : "";
    text = text.trim();
    var number = Number(text);
    return text !== "" && isFinite(number) ? number : text.toLowerCase();
  }
  function compare(a, b) {
    var numeric = [typeof a === "number", typeof b === "number"];
    if (numeric[0] && numeric[1]) return a - b;
    if (numeric[0] !== numeric[1]) return numeric[0] ? -1 : 1;
    return a < b ? -1 : a > b ? 1 : 0;
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    var headings = table.tHead ? Array.prototype.slice.call(table.tHead.rows[0].cells) : [];
    headings.forEach(function (heading, index) {
      function sort() {
        var body = table.tBodies[0];
        var up = heading.getAttribute("aria-sort") !== "ascending";
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var order = compare(key(a, index), key(b, index));
          return up ? order : -order;
        });
        headings.forEach(function (other) { other.removeAttribute("aria-sort"); });
        heading.setAttribute("aria-sort", up ? "ascending" : "descending");
        rows.forEach(function (row) { body.appendChild(row); });
      }
      heading.tabIndex = 0;
      heading.title = "Sort by " + heading.textContent;
      heading.addEventListener("click", sort);
      heading.addEventListener("keydown", function (event) {
        if (event.key === "Enter" || event.key === " ") { event.preventDefault(); sort(); }
      });
    });
    table.dataset.sortable = "ready";
  });
})();
