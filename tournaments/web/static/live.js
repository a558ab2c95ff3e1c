// The pages of `aegis-ref serve`: each draws the JSON API's documents as text (never as
// markup: every name and log comes from a stranger), and draws them again when the server
// says, over server-sent events, that the run's store changed.
"use strict";

(function () {
  var API = "/api/v1";

  function element(tag, text, className) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (className) node.className = className;
    return node;
  }

  function link(text, href) {
    var anchor = element("a", text);
    anchor.href = href;
    return anchor;
  }

  function number(value, digits) {
    if (value === null || value === undefined) return "";
    return Number(value).toFixed(digits || 0);
  }

  function botHref(name) {
    return "/bots/" + encodeURIComponent(name);
  }

  // A table from its headings and rows; a cell is text, a node, or {text|node, cls}.
  function fill(table, headings, rows) {
    table.replaceChildren();
    var head = element("tr");
    headings.forEach(function (heading) { head.appendChild(element("th", heading)); });
    table.appendChild(head);
    rows.forEach(function (cells) {
      var row = element("tr");
      cells.forEach(function (cell, index) {
        var td = element("td");
        var value = cell;
        if (cell !== null && typeof cell === "object" && !(cell instanceof Node)) {
          value = cell.node || cell.text;
          if (cell.cls) td.className = cell.cls;
        }
        if (value instanceof Node) td.appendChild(value);
        else td.textContent = value === null || value === undefined ? "" : String(value);
        if (index === 0 && !td.className) td.className = "name";
        row.appendChild(td);
      });
      table.appendChild(row);
    });
  }

  function getJSON(path) {
    return fetch(path, { cache: "no-cache" }).then(function (response) {
      if (!response.ok) throw new Error(path + ": " + response.status);
      return response.json();
    });
  }

  function matchRows(matches, fresh) {
    return matches.map(function (match) {
      var winner = match.winner === null ? "void" : match.winner;
      return [
        link(match.match_id, match.replay),
        { node: link(match.seats[0], botHref(match.seats[0])), cls: "name" },
        { node: link(match.seats[1], botHref(match.seats[1])), cls: "name" },
        match.scores[0] + "-" + match.scores[1],
        { text: winner, cls: "name" },
        { text: match.termination + (match.forfeit_kind ? " (" + match.forfeit_kind + ")" : ""), cls: "text" },
        match.games,
        link("record", match.record),
      ];
    });
  }

  function markFresh(table, previous, matches) {
    var rows = table.querySelectorAll("tr");
    matches.forEach(function (match, index) {
      if (previous && !previous.has(match.match_id)) rows[index + 1].className = "fresh";
    });
  }

  var MATCH_HEADINGS = ["match", "seat 0", "seat 1", "score", "winner", "ended by", "games", ""];

  function drawPlaying(table, playing) {
    fill(table, ["match", "round", "seat 0", "seat 1"], (playing || []).map(function (match) {
      return [match.match_id, match.round,
        { node: link(match.seats[0], botHref(match.seats[0])), cls: "name" },
        { node: link(match.seats[1], botHref(match.seats[1])), cls: "name" }];
    }));
  }
  var seenMatches = null;

  function drawRecent(table, matches, limit) {
    var shown = matches.slice(0, limit);
    fill(table, MATCH_HEADINGS, matchRows(shown));
    markFresh(table, seenMatches, shown);
    seenMatches = new Set(matches.map(function (match) { return match.match_id; }));
  }

  function drawChart(holder, standings) {
    var rated = standings.bots.filter(function (bot) { return bot.elo !== null; });
    holder.replaceChildren();
    if (!rated.length) { holder.appendChild(element("p", "No ratings yet.", "note")); return; }
    var ns = "http://www.w3.org/2000/svg";
    var low = Math.min.apply(null, rated.map(function (bot) { return bot.elo_low === null ? bot.elo : bot.elo_low; }));
    var high = Math.max.apply(null, rated.map(function (bot) { return bot.elo_high === null ? bot.elo : bot.elo_high; }));
    if (high - low < 1) { low -= 50; high += 50; }
    var left = 160, width = 480, rowHeight = 22;
    var svg = document.createElementNS(ns, "svg");
    svg.setAttribute("class", "chart");
    svg.setAttribute("width", left + width + 60);
    svg.setAttribute("height", rated.length * rowHeight + 10);
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", "Elo ratings with their intervals");
    function x(value) { return left + (value - low) / (high - low) * width; }
    function shape(tag, attributes) {
      var node = document.createElementNS(ns, tag);
      Object.keys(attributes).forEach(function (key) { node.setAttribute(key, attributes[key]); });
      svg.appendChild(node);
      return node;
    }
    rated.forEach(function (bot, index) {
      var y = index * rowHeight + 15;
      var label = shape("text", { x: 0, y: y + 4 });
      label.textContent = bot.name.length > 20 ? bot.name.slice(0, 19) + "\u2026" : bot.name;
      shape("line", { class: "axis", x1: left, x2: left + width, y1: y, y2: y });
      if (bot.elo_low !== null && bot.elo_high !== null) {
        shape("line", { class: "interval", x1: x(bot.elo_low), x2: x(bot.elo_high), y1: y, y2: y });
      }
      shape("circle", { cx: x(bot.elo), cy: y, r: 4 });
      var value = shape("text", { x: left + width + 8, y: y + 4 });
      value.textContent = number(bot.elo);
    });
    holder.appendChild(svg);
  }

  function drawStandings(standings) {
    document.getElementById("title").textContent = standings.tournament || "Standings";
    document.title = (standings.tournament || "Standings") + ": standings";
    document.getElementById("summary").textContent =
      standings.matches_played + " of " + standings.matches_scheduled + " matches played, " +
      standings.games + " games" + (standings.matches_to_play ? ", " + standings.matches_to_play + " to play" : "") +
      "; Elo intervals: " + Math.round(standings.confidence * 100) + " % (" + standings.interval_unit + ")";
    var warnings = document.getElementById("warnings");
    warnings.replaceChildren();
    standings.warnings.forEach(function (text) { warnings.appendChild(element("li", text)); });
    fill(document.getElementById("standings"),
      ["#", "bot", "Elo", "interval", "matches", "W-L", "win %", "games", "pts for", "pts against", "forfeits"],
      standings.bots.map(function (bot) {
        return [
          bot.rank,
          { node: link(bot.name, botHref(bot.name)), cls: "name" },
          number(bot.elo),
          bot.elo_low === null ? "" : number(bot.elo_low) + " \u2013 " + number(bot.elo_high),
          bot.matches, bot.wins + "-" + bot.losses, number(bot.win_pct, 1), bot.games,
          number(bot.avg_points_for, 2), number(bot.avg_points_against, 2), bot.forfeits,
        ];
      }));
    var names = standings.bots.map(function (bot) { return bot.name; });
    fill(document.getElementById("crosstable"), [""].concat(names), names.map(function (name) {
      return [{ node: link(name, botHref(name)), cls: "name" }].concat(names.map(function (other) {
        var found = (standings.crosstable[name] || {})[other];
        if (!found) return "";
        return { text: found.wins + "-" + found.losses, cls: found.wins > found.losses ? "win" : found.wins < found.losses ? "loss" : "" };
      }));
    }));
    drawChart(document.getElementById("chart"), standings);
  }

  function drawBot(bot) {
    document.getElementById("title").textContent = bot.name;
    document.title = bot.name + ": bot";
    document.getElementById("summary").textContent = bot.rank === null
      ? "Not in the standings now."
      : "Rank " + bot.rank + ", Elo " + number(bot.elo) +
        (bot.elo_low === null ? "" : " (" + number(bot.elo_low) + " \u2013 " + number(bot.elo_high) + ")");
    fill(document.getElementById("versions"), ["player", "version", "status", "entered", "matches", "W-L", "Elo"],
      bot.versions.map(function (version) {
        var status = version.current ? "plays" : version.replaced_by ? "replaced by " + version.replaced_by : "retired";
        return [version.player, version.version || "", { text: status, cls: "text" },
          (version.entered_at || "").slice(0, 19), version.matches, version.wins + "-" + version.losses, number(version.elo)];
      }));
    fill(document.getElementById("opponents"), ["bot", "opponent", "W-L", "pairs 2-0", "pairs 1-1", "pairs 0-2"],
      bot.opponents.map(function (row) {
        return [row.bot, { node: link(row.opponent, botHref(row.opponent)), cls: "name" }, row.wins + "-" + row.losses,
          row.pairs_won_both, row.pairs_split, row.pairs_lost_both];
      }));
    fill(document.getElementById("times"), ["bot", "decisions", "mean ms", "slowest ms", "faults"],
      bot.times.map(function (row) {
        var kinds = Object.keys(row.faults_by_kind).map(function (kind) { return kind + " " + row.faults_by_kind[kind]; });
        return [row.bot, row.decisions, number(row.mean_ms, 2), number(row.max_ms, 2), { text: kinds.join(", "), cls: "text" }];
      }));
    fill(document.getElementById("faults"), ["match", "kind", "game", "decision", "why"],
      bot.faults.map(function (fault) {
        return [link(fault.match_id, fault.replay), fault.kind, fault.game, fault.decision, { text: fault.explanation, cls: "text" }];
      }));
    drawRecent(document.getElementById("recent"), bot.matches, 20);
  }

  function drawLlr(holder, sprt) {
    holder.replaceChildren();
    var path = sprt.path;
    if (!path.length) { holder.appendChild(element("p", "No pair yet.", "note")); return; }
    var ns = "http://www.w3.org/2000/svg";
    var width = 640, height = 240, left = 50, top = 10;
    var low = Math.min.apply(null, path.map(function (p) { return Math.min(p.lower, p.llr); }));
    var high = Math.max.apply(null, path.map(function (p) { return Math.max(p.upper, p.llr); }));
    var last = path[path.length - 1].pair;
    function x(pair) { return left + (last > 1 ? (pair - 1) / (last - 1) : 0) * (width - left - 10); }
    function y(value) { return top + (high - value) / (high - low || 1) * (height - 2 * top); }
    var svg = document.createElementNS(ns, "svg");
    svg.setAttribute("class", "chart");
    svg.setAttribute("width", width);
    svg.setAttribute("height", height);
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", "the LLR after each pair, against its bounds");
    function line(cls, key) {
      var node = document.createElementNS(ns, "polyline");
      node.setAttribute("class", cls);
      node.setAttribute("points", path.map(function (p) { return x(p.pair) + "," + y(p[key]); }).join(" "));
      svg.appendChild(node);
    }
    line("bound", "lower");
    line("bound", "upper");
    line("llr", "llr");
    [high, 0, low].forEach(function (value) {
      var label = document.createElementNS(ns, "text");
      label.setAttribute("x", 0);
      label.setAttribute("y", y(value) + 4);
      label.textContent = number(value, 2);
      svg.appendChild(label);
    });
    holder.appendChild(svg);
  }

  function elo(estimate) {
    if (!estimate) return "";
    return number(estimate.elo, 1) + " [" + number(estimate.lower, 1) + ", " + number(estimate.upper, 1) + "]";
  }

  // The test's state: "running" until it ends, then how it ended ("finished",
  // "interrupted", "failed") with its verdict as the terminal printed it.
  function drawSprt(sprt) {
    if (sprt === null) {
      document.getElementById("summary").textContent = "Waiting for the test to play its first pair.";
      return;
    }
    var state = sprt.state || "running";
    document.body.dataset.state = state;
    document.getElementById("title").textContent = sprt.new + " vs " + sprt.old;
    document.title = sprt.new + " vs " + sprt.old + ": SPRT";
    document.getElementById("summary").textContent =
      "H0: elo " + sprt.elo0 + ", H1: elo " + sprt.elo1 + ", alpha " + sprt.alpha + ", beta " + sprt.beta + " (" + sprt.rule + " bounds)";
    var verdicts = { "continue": "Running: no decision yet.", "H1": "H1 accepted: " + sprt.new + " is better.", "H0": "H0 accepted: " + sprt.new + " is not better." };
    var ended = { "finished": "Ended: ", "interrupted": "Stopped: ", "failed": "Stopped: " };
    document.getElementById("verdict").textContent = state === "running"
      ? verdicts[sprt.decision] || sprt.decision
      : (ended[state] || state + ": ") + sprt.verdict;
    fill(document.getElementById("figures"), ["figure", "value"], [
      ["pairs", sprt.pairs + (sprt.void_pairs ? " (" + sprt.void_pairs + " void)" : "")],
      ["pairs 2-0 / 1-1 / 0-2", sprt.won_both + " / " + sprt.split + " / " + sprt.lost_both],
      ["score of " + sprt.new, sprt.score === null ? "" : number(sprt.score, 3)],
      ["LLR", number(sprt.llr, 2) + " in [" + number(sprt.lower, 2) + ", " + number(sprt.upper, 2) + "]"],
      ["Elo (allowing for the stop, 95 %)", elo(sprt.elo) + (sprt.elo && sprt.elo.rough ? " (rough: too few pairs, or too little spread)" : "")],
      ["Elo (fixed sample, 95 %)", elo(sprt.elo_fixed)],
      ["LOS", sprt.elo ? number(sprt.elo.los * 100, 1) + " %" : ""],
    ]);
    drawLlr(document.getElementById("chart"), sprt);
  }

  var page = document.body.dataset.page;
  var botName = page === "bot" ? decodeURIComponent(location.pathname.slice("/bots/".length)) : null;

  // The standings page draws what the event carries; the others fetch their document.
  function refresh(update) {
    var loads = [];
    if (page === "standings") {
      if (!update.standings) {
        document.getElementById("summary").textContent = "Waiting for the run to store its first results.";
        return Promise.resolve();
      }
      drawStandings(update.standings);
      drawPlaying(document.getElementById("playing"), update.in_play);
      drawRecent(document.getElementById("recent"), update.recent, 10);
    } else if (page === "matches") {
      loads.push(getJSON(API + "/matches").then(function (matches) {
        document.getElementById("summary").textContent =
          matches.matches_played + " matches played" + (matches.matches_to_play ? ", " + matches.matches_to_play + " to play" : "");
        drawPlaying(document.getElementById("playing"), matches.in_play);
        drawRecent(document.getElementById("recent"), matches.recent, matches.recent.length);
      }));
    } else if (page === "sprt") {
      if (update.sprt === false) drawSprt(null); // the test has not played a pair yet
      else loads.push(getJSON(API + "/sprt").then(drawSprt));
    } else if (page === "bot") {
      var path = API + "/bots/" + encodeURIComponent(botName);
      document.getElementById("json").href = path;
      loads.push(getJSON(path).then(drawBot));
    }
    return Promise.all(loads).then(function () {
      if (update.version !== undefined) document.body.dataset.version = String(update.version);
    });
  }

  var status = document.getElementById("status");
  var drawing = Promise.resolve();
  var events = new EventSource(API + "/events");
  events.addEventListener("update", function (event) {
    var update = JSON.parse(event.data);
    // The folder's HTML report (aegis-ref report), linked while there is one.
    var report = document.getElementById("report-link");
    if (report) report.hidden = !update.report;
    drawing = drawing.then(function () { return refresh(update); }).then(function () {
      var state = document.body.dataset.state;
      if (state && state !== "running") {
        status.textContent = "The test has ended: this is its final state.";
        status.className = "status";
        return;
      }
      status.textContent = "Live: updated " + new Date().toLocaleTimeString();
      status.className = "status live";
    }, function (error) {
      status.textContent = "Could not load the data: " + error.message;
      status.className = "status";
    });
  });
  events.addEventListener("error", function () {
    var state = document.body.dataset.state;
    if (state && state !== "running") {
      events.close(); // the server stops with the test it served: nothing more will come
      status.textContent = "The test has ended: this is its final state.";
      return;
    }
    status.textContent = "Reconnecting…";
    status.className = "status";
  });
})();
