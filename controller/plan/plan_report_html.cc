// report.html for `twinscale plan`: see plan_report_html.h. The page's frame (head, shared style,
// render check, escaping) is replay's (controller/replay/report_page.h); its own fixed parts are
// the raw strings kStyle and kBuild below. The C++ writes the header, the recommendation, the
// tables and the scenarios' lines as HTML (escaped); the charts draw from plan.json's document,
// embedded as it is. Every field is read with a default, so a document missing one gives a page
// with a blank there rather than an exception.
#include "controller/plan/plan_report_html.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "controller/plan/resource_headroom.h"
#include "controller/replay/report.h"
#include "controller/replay/report_html.h"
#include "controller/replay/report_page.h"

namespace twinscale::plan {
namespace {

using nlohmann::ordered_json;
using replay::HtmlEscape;

// `j[key]`, or null when `j` is not an object or has no such key.
const ordered_json& Field(const ordered_json& j, const char* key) {
  static const ordered_json* const kNull = new ordered_json();
  if (!j.is_object()) return *kNull;
  const auto it = j.find(key);
  return it == j.end() ? *kNull : *it;
}
std::string Str(const ordered_json& j, const char* key) {
  const ordered_json& v = Field(j, key);
  return v.is_string() ? v.get<std::string>() : std::string();
}
double Num(const ordered_json& j, const char* key) {
  const ordered_json& v = Field(j, key);
  return v.is_number() ? v.get<double>() : 0.0;
}
int64_t Int(const ordered_json& j, const char* key) {
  const ordered_json& v = Field(j, key);
  if (v.is_number_integer()) return v.get<int64_t>();
  // A fraction where a count belongs: its whole part, when it fits.
  const double d = v.is_number() ? v.get<double>() : 0.0;
  return std::abs(d) < 9e18 ? static_cast<int64_t>(d) : 0;
}
bool Bool(const ordered_json& j, const char* key) {
  const ordered_json& v = Field(j, key);
  return v.is_boolean() && v.get<bool>();
}
// The elements of `j[key]` when it is an array (empty otherwise).
std::vector<const ordered_json*> Items(const ordered_json& j, const char* key) {
  std::vector<const ordered_json*> out;
  const ordered_json& v = Field(j, key);
  if (v.is_array()) {
    for (const ordered_json& e : v) out.push_back(&e);
  }
  return out;
}

// A number as plan.json rounds it ("0.136", "41.2"), a large one whole ("1100000", not "1.1e+06").
std::string Number(double v) {
  return std::abs(v) >= 1e4 && std::abs(v) < 1e18 ? absl::StrFormat("%.0f", v)
                                                  : absl::StrFormat("%g", v);
}
std::string Percent(double fraction, int decimals) {
  return absl::StrFormat("%.*f%%", decimals, fraction * 100);
}

// The cell of `scenario` on `profile` (the first such), or null.
const ordered_json* CellOf(const ordered_json& plan, const std::string& scenario,
                           const std::string& profile) {
  for (const ordered_json* c : Items(plan, "cells")) {
    if (Str(*c, "scenario") == scenario && Str(*c, "profile") == profile) return c;
  }
  return nullptr;
}

std::string SloText(const ordered_json& slo) {
  std::string s =
      absl::StrFormat("TTFT p%g &le; %g ms", Num(slo, "percentile"), Num(slo, "ttft_ms"));
  if (Num(slo, "per_prompt_token_ms") > 0) {
    absl::StrAppendFormat(&s, " + %g ms per prompt token", Num(slo, "per_prompt_token_ms"));
  }
  if (Num(slo, "itl_ms") > 0) {
    absl::StrAppendFormat(&s, ", ITL p%g &le; %g ms", Num(slo, "itl_percentile"),
                          Num(slo, "itl_ms"));
  }
  return s;
}

// The CSS class of a risk word (the words are plan.json's; anything else is "unknown").
const char* RiskClass(const std::string& risk) {
  if (risk == "okay") return "okay";
  if (risk == "tight") return "tight";
  if (risk == "shortfall") return "shortfall";
  if (risk == "memory risk") return "memory-risk";
  return "unknown";
}

// "6 (5–6)": the replicas every seed needs, the spread from the smallest single seed's answer when
// they differ; or "none within maxReplicas (128)".
std::string ReplicasText(const ordered_json& cell, int64_t max_replicas) {
  if (!Bool(cell, "found")) {
    return absl::StrFormat("none within maxReplicas (%d)", max_replicas);
  }
  const int64_t most = Int(cell, "replicas"), fewest = Int(cell, "replicas_fewest");
  if (fewest == most) return absl::StrCat(most);
  return absl::StrFormat("%d <span class=\"spread\">(%d&ndash;%d)</span>", most, fewest, most);
}

// The header: the review, the baseline, the SLO, the seeds.
std::string Header(const ordered_json& plan) {
  std::string out;
  absl::StrAppend(&out, "<header>\n<h1>Capacity review: ", HtmlEscape(Str(plan, "review")),
                  "</h1>\n<p class=\"sub\">", HtmlEscape(Str(plan, "baseline")), "</p>\n<dl>\n");
  auto fact = [&out](const char* key, const std::string& value_html) {
    absl::StrAppend(&out, "<div><dt>", key, "</dt><dd>", value_html, "</dd></div>\n");
  };
  fact("SLO", SloText(Field(plan, "slo")));
  std::vector<std::string> seeds;
  for (const ordered_json* s : Items(plan, "seeds")) {
    if (s->is_number()) seeds.push_back(s->dump());
  }
  fact("seeds", absl::StrJoin(seeds, ", "));
  fact("maxReplicas", absl::StrCat(Int(plan, "max_replicas")));
  fact("profiles", absl::StrCat(Items(plan, "profiles").size()));
  fact("scenarios", absl::StrCat(Items(plan, "scenarios").size()));
  if (Field(plan, "wall_seconds").is_number()) {
    fact("run", absl::StrFormat("%.1f s", Num(plan, "wall_seconds")));
  }
  out += "</dl>\n</header>\n";
  return out;
}

// The recommended profile, with its replicas and cost at the baseline (the first scenario).
std::string Recommendation(const ordered_json& plan) {
  const std::string rec = Str(plan, "recommended_profile");
  const std::vector<const ordered_json*> scenarios = Items(plan, "scenarios");
  const std::string baseline = scenarios.empty() ? "" : Str(*scenarios.front(), "name");
  const ordered_json* cell = CellOf(plan, baseline, rec);
  std::string out =
      absl::StrCat("<p class=\"recommend\">Recommended: <b>", HtmlEscape(rec), "</b>");
  if (cell == nullptr) {
    out += ", with no cell at the baseline.";
  } else if (!Bool(*cell, "found")) {
    absl::StrAppendFormat(&out, ": at the baseline no fleet within maxReplicas (%d) meets the SLO.",
                          Int(plan, "max_replicas"));
  } else {
    absl::StrAppendFormat(
        &out,
        ": <b>%d replicas</b> at the baseline (and %d warm in reserve), <b>%s</b> "
        "per 1,000 successful requests.",
        Int(*cell, "replicas"), Int(*cell, "warm_reserve"),
        Number(Num(*cell, "cost_per_1k_successful")));
  }
  out += "</p>\n";
  return out;
}

// The headroom table of one cell: every resource's demand, capacity, headroom and risk.
std::string HeadroomTable(const ordered_json& cell) {
  const ordered_json& h = Field(cell, "headroom");
  const std::string binding = Str(h, "binding");
  std::string out =
      "<table class=\"summary headroom\">\n<thead><tr><th>resource</th><th>demand p95</th>"
      "<th>capacity</th><th>unit</th><th>headroom</th><th>risk</th></tr></thead>\n<tbody>\n";
  for (const ordered_json* r : Items(h, "resources")) {
    const std::string name = Str(*r, "resource"), risk = Str(*r, "risk");
    absl::StrAppend(&out, "<tr><td class=\"name\">", HtmlEscape(name),
                    name == binding ? " <span class=\"binding\">binding</span>" : "", "</td><td>",
                    Number(Num(*r, "demand_p95")), "</td><td>", Number(Num(*r, "capacity")),
                    "</td><td>", HtmlEscape(Str(*r, "unit")), "</td><td>",
                    Percent(Num(*r, "headroom"), 1), "</td><td><span class=\"badge ",
                    RiskClass(risk), "\">", HtmlEscape(risk), "</span></td></tr>\n");
  }
  out += "</tbody></table>\n";
  return out;
}

// Per scenario, a chart of the recommended profile's headroom and its table.
std::string HeadroomSection(const ordered_json& plan) {
  const std::string rec = Str(plan, "recommended_profile");
  std::string out = absl::StrFormat(
      "<section id=\"headroom\" data-tight-below=\"%g\">\n<h2>Headroom per resource: %s</h2>\n"
      "<p class=\"note\">At the planned fleet of the recommended profile, each resource's demand "
      "at the scenario's 95th-percentile minute against what the fleet sustains: headroom = 1 "
      "&minus; demand / capacity. <span class=\"badge okay\">okay</span> "
      "<span class=\"badge tight\">tight</span> below %g%%, "
      "<span class=\"badge shortfall\">shortfall</span> below 0, "
      "<span class=\"badge memory-risk\">memory risk</span> KV memory below %g%%. The binding "
      "resource (the least headroom of prefill, decode, KV memory and queue) is marked.</p>\n"
      "<div class=\"grid\">\n",
      kTightBelow * 100, HtmlEscape(rec), kTightBelow * 100, kTightBelow * 100);
  const std::vector<const ordered_json*> scenarios = Items(plan, "scenarios");
  for (size_t k = 0; k < scenarios.size(); ++k) {
    const std::string name = Str(*scenarios[k], "name");
    const ordered_json* cell = CellOf(plan, name, rec);
    absl::StrAppend(&out, "<figure><figcaption>", HtmlEscape(name), "</figcaption>");
    if (cell != nullptr) {
      const ordered_json& h = Field(*cell, "headroom");
      absl::StrAppendFormat(&out, "<p class=\"caption\">at %d replicas; binding: %s</p>",
                            Int(h, "planned_replicas"), HtmlEscape(Str(h, "binding")));
    } else {
      out += "<p class=\"caption\">no cell of the recommended profile</p>";
    }
    absl::StrAppendFormat(&out,
                          "<div class=\"chart short\"><canvas id=\"chart-headroom-%d\" "
                          "role=\"img\" aria-label=\"headroom per resource, %s\"></canvas></div>\n",
                          k, HtmlEscape(name));
    if (cell != nullptr) out += HeadroomTable(*cell);
    out += "</figure>\n";
  }
  out += "</div>\n</section>\n";
  return out;
}

// Every cell's numbers, a table per scenario with a row per profile, and the headroom of the
// profiles other than the recommended one (whose headroom is in the section above).
std::string CellsSection(const ordered_json& plan) {
  const int64_t max_replicas = Int(plan, "max_replicas");
  const std::string rec = Str(plan, "recommended_profile");
  const std::vector<const ordered_json*> profiles = Items(plan, "profiles");
  std::string out =
      "<section id=\"cells\">\n<h2>Every scenario and profile</h2>\n"
      "<p class=\"note\">Replicas: the smallest fleet meeting the SLO under every seed (in "
      "brackets the spread, from the smallest single seed's answer), fully warm; attainment, "
      "goodput and costs at that fleet, means over the seeds; warm reserve: the replicas to keep "
      "warm for the scenario's rises within the profile's warm-up.</p>\n";
  for (const ordered_json* s : Items(plan, "scenarios")) {
    const std::string name = Str(*s, "name");
    absl::StrAppend(&out, "<h3>", HtmlEscape(name), "</h3>\n<p class=\"note\">",
                    HtmlEscape(Str(*s, "changes")));
    absl::StrAppendFormat(&out,
                          " &middot; %d requests over %g s, mean %g req/s, p95 minute %g req/s; "
                          "prompts %g tokens (%g computed), outputs %g tokens</p>\n",
                          Int(*s, "requests"), Num(*s, "span_s"), Num(*s, "mean_rps"),
                          Num(*s, "p95_rps"), Num(*s, "prompt_mean"),
                          Num(*s, "prompt_computed_mean"), Num(*s, "output_mean"));
    out +=
        "<div class=\"scroll\"><table class=\"summary\">\n<thead><tr><th>profile</th>"
        "<th>replicas</th><th>per seed</th><th>attainment</th><th>min&ndash;max</th>"
        "<th>goodput (req/s)</th><th>per GPU</th><th>cost / h</th><th>per 1k successful</th>"
        "<th>per 1M output tokens</th><th>per replica (req/s)</th><th>warm reserve</th>"
        "<th>binding</th></tr></thead>\n<tbody>\n";
    std::string others;
    for (size_t p = 0; p < profiles.size(); ++p) {
      const std::string profile = Str(*profiles[p], "name");
      const ordered_json* cell = CellOf(plan, name, profile);
      absl::StrAppendFormat(&out,
                            "<tr><td class=\"name\"><span class=\"swatch\" "
                            "data-profile=\"%d\"></span>%s</td>",
                            p, HtmlEscape(profile));
      if (cell == nullptr) {
        out += "<td colspan=\"12\">no cell</td></tr>\n";
        continue;
      }
      std::vector<std::string> per_seed;
      for (const ordered_json* n : Items(*cell, "replicas_per_seed")) {
        per_seed.push_back(n->is_number_integer() ? absl::StrCat(n->get<int64_t>()) : "?");
      }
      const ordered_json& att = Field(*cell, "attainment");
      absl::StrAppend(
          &out, "<td>", ReplicasText(*cell, max_replicas), "</td><td>",
          absl::StrJoin(per_seed, ", "), "</td><td>", Percent(Num(att, "mean"), 2), "</td><td>",
          Percent(Num(att, "min"), 2), "&ndash;", Percent(Num(att, "max"), 2), "</td><td>",
          Number(Num(*cell, "goodput_rps")), "</td><td>", Number(Num(*cell, "goodput_per_gpu_rps")),
          "</td><td>", Number(Num(*cell, "cost_per_hour")), "</td><td>",
          Number(Num(*cell, "cost_per_1k_successful")), "</td><td>",
          Number(Num(*cell, "cost_per_million_output_tokens")), "</td><td>",
          Number(Num(*cell, "per_replica_rps")), "</td><td>", Int(*cell, "warm_reserve"),
          "</td><td>", HtmlEscape(Str(Field(*cell, "headroom"), "binding")), "</td></tr>\n");
      if (profile != rec) {
        absl::StrAppendFormat(
            &others, "<details><summary>headroom on %s at %d replicas</summary>\n",
            HtmlEscape(profile), Int(Field(*cell, "headroom"), "planned_replicas"));
        absl::StrAppend(&others, HeadroomTable(*cell), "</details>\n");
      }
    }
    absl::StrAppend(&out, "</tbody></table></div>\n", others);
  }
  out += "</section>\n";
  return out;
}

// What each scenario improves and worsens against the baseline, per profile.
std::string ChangesSection(const ordered_json& plan) {
  std::string out =
      "<section id=\"changes\">\n<h2>What each scenario changes</h2>\n"
      "<p class=\"note\">Against the baseline, on each profile.</p>\n";
  for (const ordered_json* s : Items(plan, "scenarios")) {
    const std::string name = Str(*s, "name");
    std::string items;
    for (const ordered_json* p : Items(plan, "profiles")) {
      const std::string profile = Str(*p, "name");
      const ordered_json* cell = CellOf(plan, name, profile);
      if (cell == nullptr) continue;
      const std::string improves = Str(*cell, "improves"), worsens = Str(*cell, "worsens");
      if (improves.empty() && worsens.empty()) continue;
      absl::StrAppend(&items, "<li><b>", HtmlEscape(profile), "</b>");
      if (!improves.empty()) {
        absl::StrAppend(&items, "<br><span class=\"better\">improves</span> ",
                        HtmlEscape(improves));
      }
      if (!worsens.empty()) {
        absl::StrAppend(&items, "<br><span class=\"worse\">worsens</span> ", HtmlEscape(worsens));
      }
      items += "</li>\n";
    }
    absl::StrAppend(&out, "<h3>", HtmlEscape(name), "</h3>\n");
    if (items.empty()) {
      out += "<p class=\"note\">No change against the baseline.</p>\n";
    } else {
      absl::StrAppend(&out, "<ul class=\"changes\">\n", items, "</ul>\n");
    }
  }
  out += "</section>\n";
  return out;
}

constexpr char kStyle[] =
    R"css(.recommend { font-size:16px; margin:16px 0 0; padding:12px 18px; background:#eaf4ee;
             border:1px solid #b9dcc6; border-radius:8px; }
.chart.short { height:210px; }
.spread { color:var(--muted); }
.badge.okay { background:#dcf3e3; color:#17663a; }
.badge.tight { background:#fdf0d2; color:#8a5a00; }
.badge.shortfall { background:#fbe3e3; color:#a12626; }
.badge.memory-risk { background:#efe3f8; color:#6c2f95; }
.badge.unknown { background:#eceef2; color:#6b7485; }
.binding { font-size:11px; font-weight:600; color:#fff; background:#1f2a3c; border-radius:3px; padding:0 4px; }
table.headroom { margin:8px 0 4px; }
details { margin:6px 0; } summary { cursor:pointer; color:var(--muted); }
ul.changes li { margin:4px 0; }
.better { color:#17663a; font-weight:600; } .worse { color:#a12626; font-weight:600; }
.hatch { background:repeating-linear-gradient(135deg,#e3e6eb 0 3px,#9aa3b2 3px 5px); }
)css";

// The body of the page's build(data): the replicas and cost charts, and a headroom chart per
// scenario (report_page.h's script calls it and checks the charts).
constexpr char kBuild[] = R"js(
    const profiles = data.profiles || [];
    const scenarios = data.scenarios || [];
    const cells = data.cells || [];
    const maxReplicas = data.max_replicas || 0;
    const cellOf = (s, p) => cells.find((c) => c.scenario === s && c.profile === p) || null;
    const names = scenarios.map((s) => s.name);

    // A colour per profile, the table's swatches too; a lighter shade for the warm reserve.
    const hues = [212, 27, 140, 275, 355, 185, 48, 320];
    const color = (i, alpha) => 'hsla(' + hues[i % hues.length] + ',' + (i < hues.length ? 62 : 0) +
                                '%,42%,' + alpha + ')';
    document.querySelectorAll('.swatch[data-profile]').forEach((el) => {
      el.style.background = color(Number(el.dataset.profile), 1);
    });
    // Grey stripes for a cell where no fleet within maxReplicas met the SLO.
    const hatch = (() => {
      const c = document.createElement('canvas');
      c.width = 8;
      c.height = 8;
      const g = c.getContext('2d');
      g.fillStyle = '#e3e6eb';
      g.fillRect(0, 0, 8, 8);
      g.strokeStyle = '#9aa3b2';
      g.lineWidth = 2;
      g.beginPath();
      g.moveTo(-1, 9); g.lineTo(9, -1); g.moveTo(-1, 1); g.lineTo(1, -1); g.moveTo(7, 9); g.lineTo(9, 7);
      g.stroke();
      return g.createPattern(c, 'repeat');
    })();
    const fill = (i, cs) => (ctx) =>
        (ctx.type === 'data' && cs[ctx.dataIndex] && !cs[ctx.dataIndex].found ? hatch : color(i, 0.85));
    const none = 'none within maxReplicas';

    // The words "none within maxReplicas" up the bars of such cells, on a white ground.
    const noneLabels = {
      id: 'noneLabels',
      afterDatasetsDraw(chart) {
        const ctx = chart.ctx;
        ctx.save();
        ctx.font = '600 11px ' + Chart.defaults.font.family;
        ctx.textBaseline = 'middle';
        chart.data.datasets.forEach((ds, di) => {
          if (!ds.cells || !chart.isDatasetVisible(di)) return;
          chart.getDatasetMeta(di).data.forEach((bar, k) => {
            const c = ds.cells[k];
            if (!c || c.found) return;
            const w = ctx.measureText(none).width;
            ctx.save();
            ctx.translate(bar.x, bar.base - 6);
            ctx.rotate(-Math.PI / 2);
            ctx.fillStyle = 'rgba(255,255,255,0.9)';
            ctx.fillRect(-3, -8, w + 6, 16);
            ctx.fillStyle = '#3a4454';
            ctx.fillText(none, 0, 0);
            ctx.restore();
          });
        });
        ctx.restore();
      },
    };
    // The seeds' spread on each found cell's bar: a whisker from the smallest single seed's answer
    // to the replicas every seed needs.
    const seedSpread = {
      id: 'seedSpread',
      afterDatasetsDraw(chart) {
        const ctx = chart.ctx, y = chart.scales.y;
        ctx.save();
        ctx.strokeStyle = '#1d2430';
        ctx.lineWidth = 1.5;
        chart.data.datasets.forEach((ds, di) => {
          if (!ds.spread || !chart.isDatasetVisible(di)) return;
          chart.getDatasetMeta(di).data.forEach((bar, k) => {
            const c = ds.cells[k];
            if (!c || !c.found) return;
            const top = y.getPixelForValue(c.replicas), low = y.getPixelForValue(c.replicas_fewest);
            const w = Math.max(2, Math.min(8, bar.width / 4));
            ctx.beginPath();
            ctx.moveTo(bar.x, low); ctx.lineTo(bar.x, top);
            ctx.moveTo(bar.x - w, low); ctx.lineTo(bar.x + w, low);
            ctx.moveTo(bar.x - w, top); ctx.lineTo(bar.x + w, top);
            ctx.stroke();
          });
        });
        ctx.restore();
      },
    };

    // ---- replicas needed: a stack per profile, the replicas and the warm reserve on top ----
    const replicaSets = [];
    profiles.forEach((p, i) => {
      const cs = names.map((s) => cellOf(s, p.name));
      replicaSets.push({
        label: p.name, stack: 'p' + i, cells: cs, spread: true,
        data: cs.map((c) => (c ? (c.found ? c.replicas : maxReplicas) : null)),
        backgroundColor: fill(i, cs),
      });
      replicaSets.push({
        label: p.name + ': warm reserve', stack: 'p' + i, reserve: cs,
        data: cs.map((c) => (c && c.found ? c.warm_reserve : 0)),
        backgroundColor: color(i, 0.3),
      });
    });
    charts.push(new Chart(document.getElementById('chart-replicas'), {
      type: 'bar',
      data: { labels: names, datasets: replicaSets },
      options: {
        scales: {
          x: { stacked: true },
          y: { stacked: true, beginAtZero: true, ticks: { precision: 0 },
               title: { display: true, text: 'replicas' } },
        },
        plugins: {
          legend: { position: 'top' },
          tooltip: { callbacks: { label: (c) => {
            const ds = c.dataset;
            if (ds.reserve) {
              const r = ds.reserve[c.dataIndex];
              return ds.label + ': ' + (r && r.found ? '+' + r.warm_reserve : 'n/a');
            }
            const cell = ds.cells[c.dataIndex];
            if (!cell) return ds.label + ': no cell';
            if (!cell.found) return ds.label + ': ' + none + ' (' + maxReplicas + ')';
            return ds.label + ': ' + cell.replicas + ' replicas (seeds ' + cell.replicas_fewest +
                   '\u2013' + cell.replicas + ': ' + (cell.replicas_per_seed || []).join(', ') + ')';
          } } },
        },
      },
      plugins: [seedSpread, noneLabels],
    }));

    // ---- cost per 1,000 successful requests ----
    const costSets = profiles.map((p, i) => {
      const cs = names.map((s) => cellOf(s, p.name));
      return { label: p.name, cells: cs, backgroundColor: fill(i, cs),
               data: cs.map((c) => (c ? c.cost_per_1k_successful : null)) };
    });
    charts.push(new Chart(document.getElementById('chart-cost'), {
      type: 'bar',
      data: { labels: names, datasets: costSets },
      options: {
        scales: { y: { beginAtZero: true, title: { display: true, text: 'cost per 1,000 successful requests' } } },
        plugins: {
          legend: { position: 'top' },
          tooltip: { callbacks: { label: (c) => {
            const cell = c.dataset.cells[c.dataIndex];
            if (!cell) return c.dataset.label + ': no cell';
            const at = cell.cost_per_1k_successful + ' per 1,000 successful, ' + cell.cost_per_hour +
                       ' per hour';
            return c.dataset.label + ': ' + (cell.found ? at + ' at ' + cell.replicas + ' replicas'
                                                        : none + '; ' + at + ' at ' + maxReplicas);
          } } },
        },
      },
      plugins: [noneLabels],
    }));

    // ---- headroom per resource, the recommended profile, a chart per scenario ----
    const riskColors = { 'okay': '#2e8b57', 'tight': '#e0a100', 'shortfall': '#c0392b',
                         'memory risk': '#8e44ad' };
    const tightBelow = Number(document.getElementById('headroom').dataset.tightBelow);
    // Vertical lines at x = 0 and at the "tight" threshold, labelled.
    const marks = {
      id: 'marks',
      afterDatasetsDraw(chart) {
        const { ctx, chartArea: a } = chart, x = chart.scales.x;
        ctx.save();
        for (const m of [{ v: 0, c: '#5b6577', t: '' }, { v: tightBelow, c: '#b07d00', t: 'tight below ' + tightBelow + '%' }]) {
          const px = x.getPixelForValue(m.v);
          if (!isFinite(px) || px < a.left - 1 || px > a.right + 1) continue;
          ctx.strokeStyle = m.c;
          ctx.fillStyle = m.c;
          ctx.setLineDash(m.t ? [5, 4] : []);
          ctx.beginPath();
          ctx.moveTo(px, a.top);
          ctx.lineTo(px, a.bottom);
          ctx.stroke();
          if (!m.t) continue;
          // Above the plot, right of the line, or left of it where the plot ends.
          ctx.font = '600 11px ' + Chart.defaults.font.family;
          const w = ctx.measureText(m.t).width;
          ctx.fillText(m.t, px + 4 + w > a.right ? px - 4 - w : px + 4, a.top - 4);
        }
        ctx.restore();
      },
    };
    scenarios.forEach((s, k) => {
      const cell = cellOf(s.name, data.recommended_profile);
      const h = (cell && cell.headroom) || {};
      const rs = h.resources || [];
      const binding = (r) => r && r.resource === h.binding;
      charts.push(new Chart(document.getElementById('chart-headroom-' + k), {
        type: 'bar',
        data: {
          labels: rs.map((r) => (binding(r) ? '\u25b6 ' + r.resource + ' (binding)' : r.resource)),
          datasets: [{ label: 'headroom (%)', data: rs.map((r) => (r.headroom === null ? null : 100 * r.headroom)),
                       backgroundColor: rs.map((r) => riskColors[r.risk] || '#8d96a6') }],
        },
        options: {
          indexAxis: 'y',
          layout: { padding: { top: 14 } },
          scales: {
            x: { suggestedMin: 0, suggestedMax: 100, title: { display: true, text: 'headroom (%)' } },
            y: { ticks: { font: (c) => ({ weight: binding(rs[c.index]) ? 'bold' : 'normal' }) } },
          },
          plugins: {
            legend: { display: false },
            tooltip: { callbacks: { label: (c) => {
              const r = rs[c.dataIndex];
              return r.resource + ': ' + (100 * r.headroom).toFixed(1) + '% (' + r.risk + '), p95 demand ' +
                     r.demand_p95 + ' of ' + r.capacity + ' ' + r.unit;
            } } },
          },
        },
        plugins: [marks],
      }));
    });
)js";

}  // namespace

std::string PlanReportHtml(const ordered_json& plan, std::string_view chartjs) {
  std::string body = Header(plan);
  body += "<main>\n";
  body += Recommendation(plan);
  absl::StrAppendFormat(
      &body,
      "<section id=\"replicas\">\n<h2>Replicas needed</h2>\n"
      "<p class=\"note\">Per scenario, the smallest fleet of each profile meeting the SLO under "
      "every seed, fully warm; the whisker spans the seeds' answers (the smallest single seed's "
      "to every seed's), the lighter block on top is the warm reserve. <span class=\"swatch "
      "hatch\"></span>Striped: no fleet within maxReplicas (%d) meets it (drawn at %d).</p>\n"
      "<figure><div class=\"chart tall\"><canvas id=\"chart-replicas\" role=\"img\" "
      "aria-label=\"replicas needed per scenario and profile\"></canvas></div></figure>\n"
      "</section>\n",
      Int(plan, "max_replicas"), Int(plan, "max_replicas"));
  body +=
      "<section id=\"cost\">\n<h2>Cost per 1,000 successful requests</h2>\n"
      "<p class=\"note\">At each profile's GPU-hour price, for the fleet above; striped: at "
      "maxReplicas, which misses the SLO.</p>\n"
      "<figure><div class=\"chart\"><canvas id=\"chart-cost\" role=\"img\" aria-label=\"cost per "
      "1,000 successful requests per scenario and profile\"></canvas></div></figure>\n"
      "</section>\n";
  body += HeadroomSection(plan);
  body += CellsSection(plan);
  body += ChangesSection(plan);
  body += "</main>\n";
  return replay::ChartPageHtml({
      .title = absl::StrCat("twinscale plan: ", HtmlEscape(Str(plan, "review"))),
      .style = kStyle,
      .body = std::move(body),
      .footer = "Written by <code>twinscale plan --out</code>; the same numbers are in plan.json. "
                "Charts: Chart.js, inlined.",
      .data = plan,
      .chartjs = chartjs,
      .build = kBuild,
  });
}

absl::Status WritePlanReportHtml(const std::string& dir, const ordered_json& plan,
                                 const std::string& chartjs_path) {
  absl::StatusOr<std::string> chartjs = replay::ReadChartJs(chartjs_path);
  if (!chartjs.ok()) return chartjs.status();
  return replay::WriteReportFile(absl::StrCat(dir, "/report.html"), PlanReportHtml(plan, *chartjs));
}

}  // namespace twinscale::plan
