
(function () {
  "use strict";
  var DATA = JSON.parse(document.getElementById("replay-data").textContent);
  var SUITS = {S: "\u2660", H: "\u2665", D: "\u2666", C: "\u2663"};
  var matches = DATA.matches;
  var at = {m: 0, g: 0, p: 0};

  function $(id) { return document.getElementById(id); }
  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }
  function add(parent) {
    for (var i = 1; i < arguments.length; i++) {
      var child = arguments[i];
      if (child === null || child === undefined) continue;
      parent.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return parent;
  }
  function card(code, game) {
    var suit = code.slice(-1);
    var node = el("span", "card" + (suit === "H" || suit === "D" ? " red" : ""),
      code.slice(0, -1) + (SUITS[suit] || suit));
    node.dataset.card = code;
    if (game) {
      if (suit === game.key.slice(-1)) node.classList.add("trump");
      if (game.killers.indexOf(code) >= 0) node.classList.add("killer");
    }
    return node;
  }
  function cards(codes, game, fresh) {
    var span = el("span", "cards");
    if (!codes.length) add(span, "none");
    codes.forEach(function (code) {
      var node = card(code, game);
      if (fresh && fresh.indexOf(code) >= 0) node.classList.add("new");
      span.appendChild(node);
    });
    return span;
  }
  function ms(value) { return value === null || value === undefined ? "-" : value.toFixed(1); }
  // A decision's wall time and, on the CPU clock, the CPU time it was charged beside it.
  function timeText(step) {
    var cpu = step.cpu_ms !== undefined ? ", CPU " + ms(step.cpu_ms) + " ms" : "";
    return ms(step.ms) + " ms" + cpu;
  }
  function plural(count, word) { return count + " " + word + (count === 1 ? "" : "s"); }

  function match() { return matches[at.m]; }
  function game() { var m = match(); return m ? m.games[at.g] : undefined; }
  function name(seat) { return match().players[seat]; }
  function who(seat) { return name(seat) + " (seat " + seat + ")"; }

  function describe(step, g) {
    var line = el("span", "what");
    var actor = name(step.seat);
    if (step.action === "stop") add(line, "round " + step.round + ": " + actor + " stops");
    else if (step.action === "exchange") {
      add(line, "round " + step.round + ": " + actor + " ");
      if (!step.cards.length) add(line, "keeps all cards");
      else add(line, "discards ", cards(step.cards, g), ", draws ", cards(step.drawn, g));
    } else if (step.action === "bid") add(line, actor + " bids " + step.tricks);
    else if (step.action === "pass") add(line, actor + " passes");
    else {
      add(line, actor + (step.table.length === 1 ? " leads " : " plays "), card(step.card, g));
      if (step.trick) add(line, " \u2192 trick " + step.trick + " to " + name(step.winner));
    }
    return line;
  }
  function faultsAt(m, g, decision) {
    return m.faults.filter(function (fault) {
      return fault.game === g.number && fault.decision === decision;
    });
  }
  function faultLine(fault) {
    var item = el("li", "fault");
    var where = fault.game === null ? "before the first game" : "game " + fault.game +
      (fault.decision === null ? "" : ", decision " + fault.decision);
    add(item, (fault.forfeit ? "forfeit: " : "") + fault.bot +
      (fault.seat === null ? "" : " (seat " + fault.seat + ")") + " " + fault.fault +
      " (" + where + ")" + (fault.detail ? ": " + fault.detail : ""));
    if (fault.tail.length) add(item, el("div", "tail", fault.tail.join("\n")));
    return item;
  }

  function drawMatch() {
    var m = match();
    $("match-title").textContent = "Match " + (m.number === null ? "?" : m.number) + ": " +
      who(0) + " vs " + who(1);
    var rules = Object.keys(m.rules).map(function (key) { return key + " " + m.rules[key]; });
    var meta = clear($("match-meta"));
    add(meta, "rules: " + (rules.join(", ") || "?") + "; seed " +
      (m.seed === null ? "none" : m.seed));
    if (m.draw.length === 2) {
      add(meta, "; first-master draw: " + name(0) + " ", card(m.draw[0]), " " + name(1) + " ",
        card(m.draw[1]));
      if (m.first_master !== null) add(meta, " \u2192 master " + name(m.first_master));
    }
    var outcome = clear($("outcome"));
    if (m.void) {
      outcome.className = "warning";
      add(outcome, "Void: both bots failed before the first game; the match counts for nobody.");
    } else if (m.end && m.end.winner !== null) {
      outcome.className = "";
      add(outcome, el("strong", null, "Winner: " + who(m.end.winner)), " by " +
        m.end.termination + ", scores " + m.end.scores[0] + "-" + m.end.scores[1] + " after " +
        plural(m.end.games || 0, "game"));
    } else {
      outcome.className = "";
      add(outcome, "No result in the record.");
    }
    var problem = $("problem");
    problem.hidden = !m.problem;
    problem.textContent = m.problem ? "This record cannot be replayed to its end: " + m.problem +
      " (aegis-ref verify FILE checks a record)." : "";
    $("times").hidden = !m.times[0].decisions && !m.times[1].decisions;
    var body = clear($("times").tBodies[0]);
    [0, 1].forEach(function (seat) {
      var t = m.times[seat];
      var row = el("tr");
      add(row, el("td", "num", seat), el("td", "name", name(seat)),
        el("td", "num", t.decisions), el("td", "num", ms(t.mean)), el("td", "num", ms(t.max)),
        el("td", "num", ms(t.cpu_mean)), el("td", "num", ms(t.cpu_max)));
      body.appendChild(row);
    });
    var list = clear($("fault-list"));
    m.faults.forEach(function (fault) { list.appendChild(faultLine(fault)); });
    $("faults").hidden = !m.faults.length;
    $("board").hidden = $("keys").hidden = !m.games.length;
  }

  function drawActions(m, g) {
    var list = clear($("actions"));
    var deal = el("li", "deal", "the deal");
    deal.dataset.position = "0";
    list.appendChild(deal);
    g.steps.forEach(function (step, index) {
      faultsAt(m, g, index + 1).forEach(function (fault) { list.appendChild(faultLine(fault)); });
      var item = el("li", "step");
      item.value = index + 1;
      item.dataset.position = String(index + 1);
      add(item, describe(step, g));
      if (step.ms !== undefined) add(item, el("span", "ms", "  " + timeText(step)));
      list.appendChild(item);
    });
    faultsAt(m, g, g.steps.length + 1).forEach(function (fault) {
      list.appendChild(faultLine(fault));
    });
    var tricks = clear($("tricks").tBodies[0]);
    g.tricks.forEach(function (trick, index) {
      var row = el("tr");
      row.dataset.position = String(trick.position);
      add(row, el("td", "num", index + 1), el("td", "name", name(trick.leader)),
        add(el("td"), card(trick.cards[0], g), card(trick.cards[1], g)),
        el("td", "name winner", name(trick.winner)));
      tricks.appendChild(row);
    });
  }

  function resultText(g) {
    var r = g.result;
    return who(r.attacker) + " attacked with " + r.bid + " and " + (r.made ? "made" : "missed") +
      " it (" + r.tricks[0] + "-" + r.tricks[1] + " tricks); points " + r.points[0] + "-" +
      r.points[1] + (r.bonuses.length ? " (" + r.bonuses.join(", ") + ")" : "") +
      "; scores " + r.scores_after[0] + "-" + r.scores_after[1];
  }

  function drawPosition() {
    var m = match(), g = game();
    if (!g) return;
    var p = at.p, n = g.steps.length;
    var step = p > 0 ? g.steps[p - 1] : null;
    var hands = step ? step.hands : g.deal;
    var slave = 1 - g.master;
    $("game-title").textContent = "Game " + g.number + " (" + (at.g + 1) + " of " +
      m.games.length + ") \u00b7 scores " + (p === n && g.result ?
      g.result.scores_after.join("-") : g.scores_before.join("-"));
    var key = clear($("key"));
    add(key, "key card ", card(g.key), " trump " + SUITS[g.key.slice(-1)] + "  killers ",
      cards(g.killers));
    var toMove = null;
    if (p < n) toMove = g.steps[p].seat;
    [0, 1].forEach(function (seat) {
      var box = $("seat-" + seat);
      box.querySelector(".name").textContent = who(seat);
      box.querySelector(".role").textContent = seat === g.master ? "master" : "slave";
      var fresh = step && step.seat === seat && step.action === "exchange" ? step.drawn : null;
      clear(box.querySelector(".hand")).appendChild(cards(hands[seat], g, fresh));
      var facts = "tricks " + (step ? step.won[seat] : 0);
      if (step && step.seat === seat && step.ms !== undefined) {
        facts += " \u00b7 decided in " + timeText(step);
      }
      box.querySelector(".facts").textContent = facts;
      box.classList.toggle("to-move", toMove === seat);
    });
    var table = step ? step.table : [];
    var title = clear($("trick-title"));
    var shown = clear($("trick-cards"));
    if (step && step.trick) add(title, "trick " + step.trick + " \u2192 ",
      el("span", "winner-mark", name(step.winner)));
    else add(title, step ? step.phase : "the deal");
    table.forEach(function (played) {
      var spot = el("span", "played");
      add(spot, el("span", "by", name(played[0])), card(played[1], g));
      shown.appendChild(spot);
    });
    var status = clear($("status"));
    var bids = step ? step.bids : [null, null];
    var words = [step ? step.phase : "the deal", "stock " + (step ? step.stock : g.stock)];
    if (bids[0] !== null) words.push("master bid " + bids[0] + (bids[1] !== null ?
      ", slave bid " + bids[1] : ""));
    add(status, words.join(" \u00b7 "));
    if (step) add(status, " \u2014 ", describe(step, g));
    var notice = clear($("notice"));
    notice.className = "";
    var faults = faultsAt(m, g, p + 1);
    if (faults.length) {
      notice.className = "fault";
      faults.forEach(function (fault) { notice.appendChild(faultLine(fault)); });
    } else if (p === n && g.result) {
      notice.className = "over";
      add(notice, "Game over: " + resultText(g));
    } else if (p === n && g.problem) {
      add(notice, "The record goes on with an action the rules refuse: " + g.problem);
    } else if (p === n && !g.finished) {
      add(notice, "The game was cut short here.");
    }
    notice.hidden = !notice.firstChild;
    $("result").textContent = p === n && g.result ? resultText(g) : "";
    $("position").textContent = "action " + p + " of " + n;
    var scrub = $("scrub");
    scrub.max = String(n);
    scrub.value = String(p);
    var current = null;
    Array.prototype.forEach.call($("actions").children, function (item) {
      var here = item.dataset.position === String(p);
      item.classList.toggle("current", here);
      if (item.dataset.position) item.classList.toggle("future", Number(item.dataset.position) > p);
      if (here) current = item;
    });
    if (current && current.scrollIntoView) current.scrollIntoView({block: "nearest"});
    Array.prototype.forEach.call($("tricks").tBodies[0].rows, function (row) {
      row.classList.toggle("current", row.dataset.position === String(p));
      row.classList.toggle("future", Number(row.dataset.position) > p);
    });
    $("prev-action").disabled = $("prev-trick").disabled = p === 0 && at.g === 0;
    $("next-action").disabled = $("next-trick").disabled = p === n &&
      at.g === m.games.length - 1;
    $("prev-game").disabled = at.g === 0 && p === 0;
    $("next-game").disabled = at.g === m.games.length - 1 && p === n;
    try {
      history.replaceState(null, "", "#m" + m.number + "g" + g.number + "a" + p);
    } catch (error) { /* a page opened in some viewers cannot change its address */ }
  }

  function goGame(index, position) {
    var m = match();
    at.g = Math.max(0, Math.min(index, m.games.length - 1));
    var n = m.games[at.g].steps.length;
    at.p = position === "end" ? n : Math.max(0, Math.min(position, n));
    drawActions(m, game());
    drawPosition();
  }
  function go(position) {
    at.p = Math.max(0, Math.min(position, game().steps.length));
    drawPosition();
  }
  function stops(g) {
    var list = [0];
    g.steps.forEach(function (step, index) {
      var next = g.steps[index + 1];
      if (step.trick || (step.action === "bid" || step.action === "pass") &&
          (!next || next.action === "play")) list.push(index + 1);
    });
    if (list[list.length - 1] !== g.steps.length) list.push(g.steps.length);
    return list;
  }
  var moves = {
    nextAction: function () {
      if (at.p < game().steps.length) go(at.p + 1);
      else if (at.g < match().games.length - 1) goGame(at.g + 1, 0);
    },
    prevAction: function () {
      if (at.p > 0) go(at.p - 1);
      else if (at.g > 0) goGame(at.g - 1, "end");
    },
    nextTrick: function () {
      var later = stops(game()).filter(function (p) { return p > at.p; });
      if (later.length) go(later[0]);
      else if (at.g < match().games.length - 1) goGame(at.g + 1, 0);
    },
    prevTrick: function () {
      var earlier = stops(game()).filter(function (p) { return p < at.p; });
      if (earlier.length) go(earlier[earlier.length - 1]);
      else if (at.g > 0) goGame(at.g - 1, "end");
    },
    nextGame: function () {
      if (at.g < match().games.length - 1) goGame(at.g + 1, 0);
      else go(game().steps.length);
    },
    prevGame: function () {
      if (at.p > 0) go(0);
      else if (at.g > 0) goGame(at.g - 1, 0);
    },
    start: function () { go(0); },
    end: function () { go(game().steps.length); }
  };
  var KEYS = {
    ArrowRight: "nextAction", ArrowLeft: "prevAction", ArrowDown: "nextTrick",
    ArrowUp: "prevTrick", PageDown: "nextGame", PageUp: "prevGame", n: "nextGame",
    p: "prevGame", Home: "start", End: "end"
  };

  function showMatch(index, gameIndex, position) {
    at.m = Math.max(0, Math.min(index, matches.length - 1));
    drawMatch();
    $("match-select").value = String(at.m);
    if (match().games.length) goGame(gameIndex, position);
  }
  function fromHash() {
    var found = /^#m(-?\d+)g(\d+)a(\d+)$/.exec(location.hash);
    if (!found) return null;
    var number = Number(found[1]), gameNumber = Number(found[2]);
    for (var i = 0; i < matches.length; i++) {
      if (matches[i].number === number) {
        var games = matches[i].games;
        for (var j = 0; j < games.length; j++) {
          if (games[j].number === gameNumber) return [i, j, Number(found[3])];
        }
        return [i, 0, 0];
      }
    }
    return null;
  }

  if (!matches.length) {
    $("match-title").textContent = "This record holds no match.";
    $("times").hidden = true;
    document.body.dataset.replay = "ready";
    return;
  }
  var select = $("match-select");
  matches.forEach(function (m, index) {
    var option = el("option", null, "match " + m.number + ": " + m.players[0] + " vs " +
      m.players[1] + (m.void ? " (void)" : ""));
    option.value = String(index);
    select.appendChild(option);
  });
  $("match-picker").hidden = matches.length < 2;
  select.addEventListener("change", function () { showMatch(Number(select.value), 0, 0); });
  [["prev-game", "prevGame"], ["prev-trick", "prevTrick"], ["prev-action", "prevAction"],
   ["next-action", "nextAction"], ["next-trick", "nextTrick"], ["next-game", "nextGame"]]
    .forEach(function (pair) {
      $(pair[0]).addEventListener("click", function () { moves[pair[1]](); });
    });
  $("scrub").addEventListener("input", function () { go(Number($("scrub").value)); });
  $("actions").addEventListener("click", function (event) {
    var item = event.target.closest ? event.target.closest("li[data-position]") : null;
    if (item) go(Number(item.dataset.position));
  });
  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    var target = event.target;
    if (target && (target.tagName === "SELECT" || target.tagName === "INPUT")) return;
    var move = KEYS[event.key];
    if (!move || !game()) return;
    event.preventDefault();
    moves[move]();
  });
  window.addEventListener("hashchange", function () {
    var place = fromHash();
    if (place) showMatch(place[0], place[1], place[2]);
  });
  var start = fromHash() || [0, 0, 0];
  showMatch(start[0], start[1], start[2]);
  document.body.dataset.replay = "ready";
})();
