// tracejit view: the page's script (inlined into the report). Clicking an op highlights
// what it became (recorded ops) or where it came from (optimized ops); the filter box hides
// the ops whose row does not contain its text; the page address may name an op
// (`#t0-i5`) or a filter (`#q=cse`) to start from.
(function () {
  'use strict';
  var doc = document;
  var rows = Array.prototype.slice.call(doc.querySelectorAll('tr.op'));

  function clear() {
    doc.querySelectorAll('tr.hl, tr.hl-src').forEach(function (r) {
      r.classList.remove('hl', 'hl-src');
    });
  }

  function targets(row) {
    var attr = row.classList.contains('in') ? 'data-to' : 'data-from';
    return (row.getAttribute(attr) || '').split(' ').filter(function (id) { return id; })
      .map(function (id) { return doc.getElementById(id); })
      .filter(function (r) { return r; });
  }

  function select(row, scroll) {
    clear();
    row.classList.add('hl-src');
    var ts = targets(row);
    ts.forEach(function (t) { t.classList.add('hl'); });
    var d = row.closest('details.trace-d');
    if (d) { d.open = true; }
    if (scroll && ts.length) { ts[0].scrollIntoView({ block: 'nearest' }); }
  }

  doc.addEventListener('click', function (ev) {
    if (ev.target.closest('details.asm, a')) { return; }
    var row = ev.target.closest('tr.op');
    if (row) { select(row, true); }
  });

  var box = doc.getElementById('filter');
  var count = doc.getElementById('filter-count');
  function filter(q) {
    q = q.trim().toLowerCase();
    var shown = 0;
    rows.forEach(function (r) {
      var hit = !q || r.textContent.toLowerCase().indexOf(q) >= 0;
      r.hidden = !hit;
      if (hit) { shown += 1; }
    });
    doc.querySelectorAll('section.trace').forEach(function (s) {
      var any = !q || s.querySelector('tr.op:not([hidden])') !== null;
      s.hidden = !any;
    });
    count.textContent = q ? shown + ' of ' + rows.length + ' ops' : '';
    doc.body.setAttribute('data-filter', q);
  }
  box.addEventListener('input', function () { filter(box.value); });

  function openAll(open) {
    doc.querySelectorAll('details.trace-d').forEach(function (d) { d.open = open; });
  }
  doc.getElementById('expand').addEventListener('click', function () { openAll(true); });
  doc.getElementById('collapse').addEventListener('click', function () { openAll(false); });

  function fromAddress() {
    var h = decodeURIComponent(location.hash.slice(1));
    if (h.indexOf('q=') === 0) {
      box.value = h.slice(2);
      filter(box.value);
      return;
    }
    var row = h && doc.getElementById(h);
    if (row && row.classList.contains('op')) { select(row, false); }
  }
  window.addEventListener('hashchange', fromAddress);
  fromAddress();
  doc.body.setAttribute('data-view-ready', String(rows.length));
})();
