#!/bin/bash
# Flame graphs and the HTML report in a real browser. render-fixture writes the forms example's
# flame graph, its icicle (the inverted tree) and a two-resource report; headless Chromium opens a
# wrapper page that loads them in iframes, hovers, clicks and searches through the graphs' own
# scripts (Search's prompt() is stood in for), and writes what then shows, one key=value a line,
# into its own DOM, which --dump-dom prints. Expected values are worked by hand: forms has 614
# hits and the graph 1180 px, so a frame of H hits is H / 614 * 1180 px wide.
# Usage: test-flame-chromium.sh RENDER-FIXTURE
set -u
here=$(dirname "$0")
. "$here/tap.sh"
fixture=$1

browser=$(command -v chromium || command -v chromium-browser || true)
[ -n "$browser" ] || skip_all "chromium is not installed (packaging/install-deps installs it)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$fixture" "$tmp"
ok $? "render-fixture writes flame.svg, icicle.svg and report.html"

cat > "$tmp/wrapper.html" <<'EOF'
<!DOCTYPE html>
<html><head><meta charset="utf-8">
<script>
var out = [], pending = 3;

function say(key, value) { out.push(key + "=" + value); }
function fire(el, type) { el.dispatchEvent(new MouseEvent(type, { bubbles: true, cancelable: true })); }
function frame(svg, name, i) {
        return Array.from(svg.querySelectorAll("g.fg-frame"))
                .filter(function (g) { return g.getAttribute("data-n") === name; })[i || 0];
}
function attr(g, name) { return g.querySelector("rect").getAttribute(name); }
function label(g) { return g.querySelector("text").textContent; }
function hidden(el) { return el.ownerDocument.defaultView.getComputedStyle(el).display === "none"; }
function text(svg, cls) { return svg.querySelector("." + cls).textContent; }
function matches(svg) { return svg.querySelectorAll("g.fg-match").length; }
function search(svg, term) {
        svg.ownerDocument.defaultView.prompt = function () { return term; };
        fire(svg.querySelector(".fg-search"), "click");
}

function flame(p, svg) {
        var main = frame(svg, "main"), invoice = frame(svg, "invoice"), envelope = frame(svg, "envelope");
        var inner = frame(svg, "db_get_property", 1);   /* invoice's own: 22 hits */
        var unzoom = svg.querySelector(".fg-unzoom");

        say(p + "frames", svg.querySelectorAll("g.fg-frame").length);
        say(p + "root.y", attr(frame(svg, "all"), "y"));
        fire(invoice.querySelector("rect"), "mouseover");
        say(p + "hover", text(svg, "fg-details"));
        fire(invoice.querySelector("rect"), "mouseout");
        say(p + "hover.out", "'" + text(svg, "fg-details") + "'");

        say(p + "label.before", label(inner));
        fire(invoice.querySelector("text"), "click");
        say(p + "zoom", attr(invoice, "x") + " " + attr(invoice, "width"));
        say(p + "zoom.sibling.hidden", hidden(envelope));
        say(p + "zoom.parent", attr(main, "width") + " " + main.classList.contains("fg-parent") + " " + hidden(main));
        say(p + "zoom.child", attr(frame(svg, "address_information"), "width"));
        say(p + "zoom.other.hidden", hidden(frame(svg, "db_update_record")));
        say(p + "label.after", label(inner));
        say(p + "unzoom.shown", !hidden(unzoom));
        fire(unzoom, "click");
        say(p + "reset", attr(invoice, "width") + " " + hidden(envelope) + " " +
            main.classList.contains("fg-parent") + " " + hidden(unzoom) + " " + label(inner));

        search(svg, "address_information");
        say(p + "search", text(svg, "fg-matched") + " / " + matches(svg) + " frames");
        say(p + "search.fill", getComputedStyle(frame(svg, "address_information").querySelector("rect")).fill);
        say(p + "search.button", text(svg, "fg-search"));
        fire(svg.querySelector(".fg-search"), "click");
        say(p + "search.cleared", matches(svg) + " '" + text(svg, "fg-matched") + "' " + text(svg, "fg-search"));
        search(svg, "db_");
        say(p + "search.nested", text(svg, "fg-matched") + " / " + matches(svg) + " frames");
        fire(svg.querySelector(".fg-search"), "click");
        search(svg, "^form_(US|NJ)");
        say(p + "search.regexp", text(svg, "fg-matched") + " / " + matches(svg) + " frames");
        fire(svg.querySelector(".fg-search"), "click");
        search(svg, "(");
        say(p + "search.literal", text(svg, "fg-matched") + " / " + matches(svg) + " frames");
}

function icicle(p, svg) {
        var leaf = frame(svg, "db_read_record"), get = frame(svg, "db_get_property");
        var update = frame(svg, "db_update_record");

        say(p + "rows", attr(frame(svg, "all"), "y") + " " + attr(leaf, "y") + " " + attr(get, "y"));
        fire(update.querySelector("rect"), "mouseover");
        say(p + "hover", text(svg, "fg-details"));
        fire(get.querySelector("rect"), "click");
        say(p + "zoom", attr(get, "width") + " " + hidden(update) + " " + attr(leaf, "width") + " " +
            leaf.classList.contains("fg-parent"));
}

function report(p, doc) {
        var svgs = doc.querySelectorAll("svg.fg"), names = doc.querySelectorAll("td.name");

        say(p + "sections", Array.from(doc.querySelectorAll("section h2"))
                .map(function (h) { return h.textContent; }).join(","));
        say(p + "graphs", svgs.length);
        say(p + "cxx", Array.from(names).some(function (td) { return td.textContent === "std::map<int, int>::find&"; }));
        fire(frame(svgs[0], "invoice").querySelector("rect"), "click");
        say(p + "zoom", attr(frame(svgs[0], "invoice"), "width") + " " + hidden(frame(svgs[0], "envelope")));
        say(p + "zoom.other", svgs[1].querySelectorAll("g.fg-frame.fg-hide").length + " hidden in the second graph");
        fire(frame(svgs[1], "std::map<int, int>::find&").querySelector("rect"), "mouseover");
        say(p + "hover", text(svgs[1], "fg-details") + " / '" + text(svgs[0], "fg-details") + "'");
        search(svgs[1], "find");
        say(p + "search", text(svgs[1], "fg-matched") + " / '" + text(svgs[0], "fg-matched") + "' " + matches(svgs[0]));
}

function loaded() {
        if (--pending > 0)
                return;
        try {
                flame("flame.", document.getElementById("flame").contentDocument.documentElement);
                icicle("icicle.", document.getElementById("icicle").contentDocument.documentElement);
                report("report.", document.getElementById("report").contentDocument);
        } catch (e) {
                say("error", e + " " + e.stack);
        }
        say("done", 1);
        document.getElementById("result").textContent = "\n" + out.join("\n") + "\n";
}
</script></head>
<body>
<pre id="result"></pre>
<iframe id="flame" src="flame.svg" width="1220" height="200" onload="loaded()"></iframe>
<iframe id="icicle" src="icicle.svg" width="1220" height="200" onload="loaded()"></iframe>
<iframe id="report" src="report.html" width="1220" height="800" onload="loaded()"></iframe>
</body></html>
EOF

timeout 50 "$browser" --headless --no-sandbox --disable-gpu --disable-background-networking \
        --disable-component-update --no-first-run --user-data-dir="$tmp/profile" \
        --allow-file-access-from-files --virtual-time-budget=10000 \
        --dump-dom "file://$tmp/wrapper.html" > "$tmp/dom.html" 2> "$tmp/chromium.log"
ok $? "chromium loads the wrapper page"
python3 -c '
import html, re, sys
m = re.search(r"<pre id=\"result\">(.*?)</pre>", open(sys.argv[1], encoding="utf-8").read(), re.S)
sys.stdout.write(html.unescape(m.group(1)) if m else "")' "$tmp/dom.html" > "$tmp/result"
get() {
        sed -n "s/^$1=//p" "$tmp/result"
}
is "$(get error)" "" "no script errors"
is "$(get done)" 1 "the wrapper ran to the end"

# The flame graph: 33 nodes and all, the root at the bottom of six rows.
is "$(get flame.frames)" 34 "flame: 34 frames"
is "$(get flame.root.y)" 136 "flame: the root row at the bottom"
is "$(get flame.hover)" "main → invoice (107 hits, 17.43%)" "hover: path, hits and fraction in the details line"
is "$(get flame.hover.out)" "''" "leaving the frame clears it"
is "$(get flame.label.before)" "db_.." "a 22-hit frame's label is cut to its 42 px"
is "$(get flame.zoom)" "10.00 1180.00" "click: the frame fills the width"
is "$(get flame.zoom.sibling.hidden)" true "click: its sibling is hidden"
is "$(get flame.zoom.parent)" "1180.00 true false" "click: its parent stays, a faded full-width bar"
is "$(get flame.zoom.child)" "937.38" "click: its child scales, 85/107 of 1180 px"
is "$(get flame.zoom.other.hidden)" true "click: another subtree is hidden"
is "$(get flame.label.after)" "db_get_property" "labels are refitted: 22/107 of 1180 px holds the name"
is "$(get flame.unzoom.shown)" true "Reset zoom shows"
is "$(get flame.reset)" "205.64 false false true db_.." "Reset zoom restores widths, labels and siblings"
is "$(get flame.search)" "Matched: 68.73% of the total / 5 frames" "search: 422/614 in 5 frames"
is "$(get flame.search.fill)" "rgb(230, 0, 230)" "search: matches are highlighted"
is "$(get flame.search.button)" "Clear search" "search: the control offers to clear"
is "$(get flame.search.cleared)" "0 '' Search" "clear search"
is "$(get flame.search.nested)" "Matched: 100.00% of the total / 22 frames" "search: nested matches counted once"
is "$(get flame.search.regexp)" "Matched: 34.36% of the total / 2 frames" "search: a regular expression"
is "$(get flame.search.literal)" "Matched: 0.00% of the total / 0 frames" "search: an invalid one is literal text"

# The icicle of the inverted tree: the root on top, callers below.
is "$(get icicle.rows)" "56 72 88" "icicle: the root on top, callers below"
is "$(get icicle.hover)" "db_read_record ← db_update_record (84 hits, 13.68%)" "icicle: paths read callee ← caller"
is "$(get icicle.zoom)" "1180.00 true 1180.00 true" "icicle: zoom into db_get_property"

# The report: two resources, each with its own graph and script.
is "$(get report.sections)" "cpu-time,page-faults" "report: a section per resource"
is "$(get report.graphs)" 2 "report: two inline flame graphs"
is "$(get report.cxx)" true "report: the C++ name reads as written"
is "$(get report.zoom)" "1180.00 true" "report: zoom in the first graph"
is "$(get report.zoom.other)" "0 hidden in the second graph" "report: the second graph is untouched"
is "$(get report.hover)" "main → uniquify_db → std::map<int, int>::find& (300 hits, 14.03%) / ''" \
        "report: hover in the second graph only"
is "$(get report.search)" "Matched: 14.03% of the total / '' 0" "report: search in the second graph only"

[ "$tap_failed" -eq 0 ] || sed 's/^/# /' "$tmp/result"
done_testing
