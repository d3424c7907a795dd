// report.html: see report_html.h. The page's own fixed parts (the picker's style and the charts'
// script) are the raw strings kStyle and kBuild below, the frame shared with plan's page is
// report_page.h's; the C++ writes the header, the table and the configuration as HTML (escaped)
// and the numbers the charts need as one JSON document. File I/O is at the bottom.
#include "controller/replay/report_html.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "controller/replay/report_page.h"
#include "controller/replay/truth.h"
#include "nlohmann/json.hpp"

namespace twinscale::replay {
namespace {

using nlohmann::ordered_json;

std::string SloText(const sim::TtftSlo& slo) {
  std::string s = absl::StrFormat("TTFT p%g &le; %g ms", slo.percentile, slo.threshold.millis());
  if (slo.per_prompt_token > sim::SimDuration::Zero()) {
    absl::StrAppendFormat(&s, " + %g ms per prompt token", slo.per_prompt_token.millis());
  }
  return s;
}

// The numbers the charts draw: summary.json's document plus the timelines (column arrays, rounded
// as timeline.csv rounds them), each policy's scale events with the decision's reason, the
// traffic (from the first timeline: every policy sees the same trace) and the oracle's fleet per
// minute.
ordered_json ChartData(const ReportHeader& header, const std::vector<ReplaySummary>& summaries,
                       const OracleResult* oracle, const std::vector<ReplayResult>& results) {
  ordered_json j = ordered_json::parse(SummaryJson(header, summaries, oracle));
  j["config"]["target_percent"] = {{"requests", RoundForPeople(header.target.requests * 100, 4)},
                                   {"minutes", RoundForPeople(header.target.minutes * 100, 4)}};
  ordered_json timelines = ordered_json::array();
  for (const ReplaySummary& s : summaries) {
    const ReplayResult* r = nullptr;
    for (const ReplayResult& candidate : results) {
      if (candidate.summary.policy == s.policy) r = &candidate;
    }
    ordered_json t;
    t["policy"] = s.policy;
    ordered_json time = ordered_json::array(), ready = ordered_json::array(),
                 warming = ordered_json::array(), desired = ordered_json::array(),
                 waiting = ordered_json::array(), running = ordered_json::array(),
                 kv = ordered_json::array(), ttft = ordered_json::array(),
                 rejected = ordered_json::array(), events = ordered_json::array();
    if (r != nullptr) {
      for (size_t i = 0; i < r->timeline.size(); ++i) {
        const TimelineRow& row = r->timeline[i];
        const double seconds = absl::ToDoubleSeconds(row.time);
        const double interval = absl::ToDoubleSeconds(row.interval);
        time.push_back(RoundForPeople(seconds, 3));
        ready.push_back(row.ready);
        warming.push_back(row.warming);
        desired.push_back(row.desired);
        waiting.push_back(row.waiting);
        running.push_back(row.running);
        kv.push_back(RoundForPeople(row.kv_mean, 4));
        ttft.push_back(row.ttft_p90_ms ? ordered_json(RoundForPeople(*row.ttft_p90_ms, 1))
                                       : ordered_json(nullptr));
        rejected.push_back(interval > 0 ? RoundForPeople(row.rejected / interval, 3) : 0.0);
        // The initial count is not in the timeline, so a change at the first decision is not
        // marked (the summary's scale_events does count it).
        if (i > 0 && row.desired != r->timeline[i - 1].desired) {
          events.push_back({{"t", RoundForPeople(seconds, 3)},
                            {"from", r->timeline[i - 1].desired},
                            {"to", row.desired},
                            {"reason", row.reason}});
        }
      }
    }
    t["t"] = std::move(time);
    t["ready"] = std::move(ready);
    t["warming"] = std::move(warming);
    t["desired"] = std::move(desired);
    t["waiting"] = std::move(waiting);
    t["running"] = std::move(running);
    t["kv"] = std::move(kv);
    t["ttft_p90_ms"] = std::move(ttft);
    t["rejected_rps"] = std::move(rejected);
    t["events"] = std::move(events);
    // What the twin said and what happened (twin_error.h), at each counted decision's time:
    // percentages of the span's requests within the SLO. Empty for a policy without a twin.
    ordered_json twin_t = ordered_json::array(), said = ordered_json::array(),
                 happened = ordered_json::array();
    // The plan at every decision whose span the record covers (CheckedPrediction::cut false):
    // the rate it forecast for its span and the rate that came over that span, at the span's
    // middle; the aim and the SLO budget's record, at the decision.
    ordered_json plan_t = ordered_json::array(), span_t = ordered_json::array(),
                 forecast = ordered_json::array(), came = ordered_json::array(),
                 aim = ordered_json::array(), budget_requests = ordered_json::array(),
                 budget_minutes = ordered_json::array();
    if (r != nullptr) {
      for (const CheckedPrediction& c : r->twin_checks) {
        const TwinPrediction& p = c.predicted;
        plan_t.push_back(RoundForPeople(absl::ToDoubleSeconds(p.at), 3));
        aim.push_back(RoundForPeople(p.aim_percent, 2));
        budget_requests.push_back(RoundForPeople(p.budget_requests_percent, 3));
        budget_minutes.push_back(RoundForPeople(p.budget_minutes_percent, 3));
        const double span = absl::ToDoubleSeconds(p.horizon - p.judge_from);
        if (!c.cut && span > 0) {
          span_t.push_back(
              RoundForPeople(absl::ToDoubleSeconds(p.at + (p.judge_from + p.horizon) / 2), 3));
          forecast.push_back(RoundForPeople(p.forecast_rps, 2));
          came.push_back(RoundForPeople(static_cast<double>(c.requests) / span, 2));
        }
        if (!c.counted) continue;
        twin_t.push_back(RoundForPeople(absl::ToDoubleSeconds(p.at), 3));
        said.push_back(RoundForPeople(100 * p.attainment, 2));
        happened.push_back(RoundForPeople(100 * c.observed_attainment, 2));
      }
    }
    t["twin"] = {{"t", std::move(twin_t)},
                 {"predicted", std::move(said)},
                 {"observed", std::move(happened)}};
    t["plan"] = {{"t", std::move(plan_t)},
                 {"aim", std::move(aim)},
                 {"budget_requests", std::move(budget_requests)},
                 {"budget_minutes", std::move(budget_minutes)},
                 {"span_t", std::move(span_t)},
                 {"forecast_rps", std::move(forecast)},
                 {"came_rps", std::move(came)}};
    timelines.push_back(std::move(t));
  }
  j["timelines"] = std::move(timelines);
  ordered_json traffic;
  ordered_json time = ordered_json::array(), rps = ordered_json::array(),
               prompt = ordered_json::array(), output = ordered_json::array();
  if (!results.empty()) {
    for (const TimelineRow& row : results.front().timeline) {
      time.push_back(RoundForPeople(absl::ToDoubleSeconds(row.time), 3));
      rps.push_back(RoundForPeople(row.arrival_rps, 3));
      prompt.push_back(RoundForPeople(row.prompt_tokens_per_s, 1));
      output.push_back(RoundForPeople(row.output_tokens_per_s, 1));
    }
  }
  traffic["t"] = std::move(time);
  traffic["arrival_rps"] = std::move(rps);
  traffic["prompt_tokens_per_s"] = std::move(prompt);
  traffic["output_tokens_per_s"] = std::move(output);
  j["traffic"] = std::move(traffic);
  ordered_json minutes = ordered_json::array();
  if (oracle != nullptr) {
    for (const OracleMinute& m : oracle->minutes) minutes.push_back(m.replicas);
  }
  j["oracle_minutes"] = std::move(minutes);
  return j;
}

// The summary table: the terminal table's columns and numbers, then the families and the oracle.
std::string SummaryTable(const ReportHeader& h, const std::vector<ReplaySummary>& summaries,
                         const OracleResult* oracle) {
  std::string out =
      "<div class=\"scroll\"><table class=\"summary\">\n<thead><tr><th>policy</th><th>GPU-h</th>"
      "<th>served</th><th>rejected</th><th>TTFT p50 (ms)</th><th>p90</th><th>p99</th>"
      "<th>attain</th><th>minutes met</th><th>scales</th><th>max</th><th>wall s</th>"
      "<th>target</th></tr></thead>\n<tbody>\n";
  for (size_t i = 0; i < summaries.size(); ++i) {
    const ReplaySummary& s = summaries[i];
    const bool met = MeetsTarget(s, h.target);
    absl::StrAppendFormat(
        &out,
        "<tr><td class=\"name\"><span class=\"swatch\" data-policy=\"%d\"></span>%s</td>"
        "<td>%.3f</td><td>%d</td><td>%d</td><td>%.1f</td><td>%.1f</td><td>%.1f</td>"
        "<td>%.2f%%</td><td>%d/%d %.1f%%</td><td>%d</td><td>%d</td><td>%.2f</td>"
        "<td><span class=\"badge %s\">%s</span></td></tr>\n",
        i, HtmlEscape(s.policy), s.gpu_hours, s.served, s.rejected, s.ttft_p50_ms, s.ttft_p90_ms,
        s.ttft_p99_ms, s.attainment * 100, s.minutes_meeting_slo, s.minutes_with_traffic,
        s.minute_share * 100, s.scale_events, s.max_replicas, s.wall_seconds,
        met ? "met" : "missed", met ? "met" : "missed");
  }
  out +=
      "</tbody></table></div>\n<h3>Cheapest member of each family meeting the target</h3>\n<ul>\n";
  for (const FamilyBest& f : CheapestPerFamily(summaries, h.target)) {
    if (f.any_meets) {
      absl::StrAppendFormat(&out, "<li><b>%s</b>: %s, %.3f GPU-h</li>\n", HtmlEscape(f.family),
                            HtmlEscape(f.policy), f.gpu_hours);
    } else {
      absl::StrAppendFormat(&out, "<li><b>%s</b>: none of %d meets it</li>\n", HtmlEscape(f.family),
                            f.members);
    }
  }
  out += "</ul>\n";
  if (oracle != nullptr) {
    absl::StrAppendFormat(&out,
                          "<p>Zero-lag oracle (lower bound): <b>%.3f GPU-h</b>, at most %d "
                          "replicas, %d of %d minutes unmeetable by any fleet.</p>\n",
                          oracle->gpu_hours, oracle->max_replicas, oracle->unmeetable_minutes,
                          oracle->minutes.size());
    if (oracle->for_share && oracle->for_share->reached) {
      const ShareOracle& f = *oracle->for_share;
      absl::StrAppendFormat(&out,
                            "<p>Zero-lag oracle for the target (every minute at its p90 fleet or "
                            "more, %g%% of all requests within the SLO): <b>%.3f GPU-h</b>, at "
                            "most %d replicas.</p>\n",
                            f.share * 100, f.gpu_hours, f.max_replicas);
      if (f.late && f.late->reached) {
        absl::StrAppendFormat(&out,
                              "<p>The same fleet %d minutes late (a perfect forecast, replicas "
                              "Ready after the warm-up) needs %d replica%s more to meet the "
                              "target: <b>%.3f GPU-h</b>.</p>\n",
                              f.late->lag_minutes, f.late->margin, f.late->margin == 1 ? "" : "s",
                              f.late->gpu_hours);
      } else if (f.late) {
        absl::StrAppendFormat(&out,
                              "<p>The same fleet %d minutes late misses the target even with %d "
                              "replicas more.</p>\n",
                              f.late->lag_minutes, f.late->margin);
      }
    } else if (oracle->for_share) {
      absl::StrAppendFormat(&out,
                            "<p>Zero-lag oracle for the target: out of reach, %d replicas every "
                            "minute bring %.2f%% of requests within the SLO.</p>\n",
                            oracle->for_share->max_replicas, oracle->for_share->attainment * 100);
    }
  } else {
    out += "<p>The zero-lag oracle was not computed (<code>--oracle=false</code>).</p>\n";
  }
  return out;
}

// The resolved configuration and the truth perturbations, each with what it does.
std::string ConfigSection(const ReportHeader& h, const OracleResult* oracle,
                          const std::vector<ReplaySummary>& summaries) {
  std::string out = "<table class=\"kv\">\n";
  auto row = [&out](const char* key, const std::string& value_html) {
    absl::StrAppend(&out, "<tr><th>", key, "</th><td>", value_html, "</td></tr>\n");
  };
  row("trace", HtmlEscape(h.trace));
  row("requests",
      absl::StrFormat("%d over %.0f s (first to last arrival)", h.requests, h.span_seconds));
  row("deployment", HtmlEscape(h.deployment));
  row("SLO", SloText(h.slo));
  row("target", absl::StrFormat("&ge; %g%% of requests within the SLO and &ge; %g%% of minutes "
                                "with traffic meeting it%s",
                                h.target.requests * 100, h.target.minutes * 100,
                                HtmlEscape(LastMinuteText(summaries))));
  row("truth", HtmlEscape(h.truth));
  row("seed", absl::StrCat(h.seed));
  row("start", HtmlEscape(PreRollText(h.pre_roll, h.pre_roll_from_history)));
  row("policies", absl::StrCat(summaries.size()));
  row("oracle", oracle != nullptr ? absl::StrFormat("computed (%d minutes)", oracle->minutes.size())
                                  : std::string("not computed"));
  out += "</table>\n<h3>Truth perturbations</h3>\n";
  absl::StatusOr<Truth> truth = ParseTruth(h.truth);
  if (!truth.ok()) {
    absl::StrAppend(&out, "<p>", HtmlEscape(h.truth), "</p>\n");
    return out;
  }
  struct Item {
    const char* name;
    bool on;
    std::string what;
  };
  const Item items[] = {
      {"efficiency", truth->efficiency,
       absl::StrFormat("compute and bandwidth efficiency x%g: every step's prefill and decode "
                       "terms run at %g%% of the profile's speed",
                       kTruthEfficiency, kTruthEfficiency * 100)},
      {"noise", truth->noise,
       absl::StrFormat("gamma noise on every step time, CV %g", kTruthStepNoiseCv)},
      {"warmup", truth->warmup,
       absl::StrFormat("every lifecycle stage's median delay x%g and its p90/median ratio x%g",
                       kTruthWarmupMedianFactor, kTruthWarmupTailFactor)},
      {"routing", truth->routing,
       "Random routing in the truth fleet, whatever router the policy assumes"},
      {"frontend", truth->frontend,
       absl::StrFormat("%g ms added to every request's TTFT (the API server's time)",
                       kTruthFrontEndDelayUs / 1000)},
  };
  out += "<table class=\"kv\">\n";
  for (const Item& it : items) {
    absl::StrAppendFormat(
        &out, "<tr><th>%s</th><td><span class=\"badge %s\">%s</span></td><td>%s</td></tr>\n",
        it.name, it.on ? "on" : "off", it.on ? "on" : "off", HtmlEscape(it.what));
  }
  out += "</table>\n";
  if (!truth->any()) {
    out += "<p>No perturbation: the truth fleet is the twin's own model of the deployment.</p>\n";
  }
  return out;
}

// The picker's rules, after the shared ones (report_page.h).
constexpr char kStyle[] =
    R"css(#picker { display:flex; flex-wrap:wrap; gap:6px 8px; align-items:center; margin:6px 0 14px; }
#picker button { font:inherit; font-size:12px; padding:3px 10px; border:1px solid var(--line); background:#f3f5f8;
                 border-radius:5px; cursor:pointer; }
#picker button:hover { background:#e6ebf2; }
#picker .sep { width:1px; height:20px; background:var(--line); margin:0 4px; }
.chip { display:inline-flex; align-items:center; gap:2px; padding:2px 9px 2px 6px; border:1px solid var(--line);
        border-radius:14px; font-size:12px; cursor:pointer; user-select:none; background:#fff; }
.chip input { margin:0 5px 0 0; }
.chip.off { color:#9aa3b2; } .chip.off .swatch { opacity:.35; }
)css";

// The body of the page's build(data) (report_page.h's script calls it and checks the charts).
constexpr char kBuild[] = R"js(
    const policies = data.policies;
    const cfg = data.config;
    // Colours: a hue per family, members of a family from dark to light, so ~15 policies in a few
    // families stay readable and a family reads as one.
    const hues = [212, 27, 140, 355, 275, 185, 48, 320, 95, 240];
    const families = [];
    for (const p of policies) if (!families.includes(p.family)) families.push(p.family);
    const colors = policies.map((p) => {
      const fam = families.indexOf(p.family);
      const members = policies.filter((q) => q.family === p.family);
      const k = members.indexOf(p);
      const light = members.length === 1 ? 42 : 32 + (34 * k) / (members.length - 1);
      const sat = fam < hues.length ? 70 : 0;
      return 'hsl(' + hues[fam % hues.length] + ',' + sat + '%,' + light.toFixed(1) + '%)';
    });
    const faded = (c) => c.replace('hsl(', 'hsla(').replace(')', ',0.55)');
    document.querySelectorAll('.swatch[data-policy]').forEach((el) => {
      el.style.background = colors[Number(el.dataset.policy)];
    });

    const minutes = (sec) => sec / 60;
    const xAxis = { type: 'linear', title: { display: true, text: 'time since the first arrival (min)' },
                    ticks: { maxTicksLimit: 13 } };
    const fmt = (v, d) => (v === null || v === undefined) ? 'n/a' : Number(v).toFixed(d);

    // Dashed reference lines with a label, at a value of the x or y axis.
    function refLines(lines) {
      return {
        id: 'refLines',
        afterDatasetsDraw(chart) {
          const { ctx, chartArea: a } = chart;
          for (const l of lines) {
            if (l.dataset !== undefined && !chart.isDatasetVisible(l.dataset)) continue;
            const scale = chart.scales[l.axis];
            const p = scale.getPixelForValue(l.value);
            if (!isFinite(p)) continue;
            const vertical = l.axis === 'x';
            if (vertical ? (p < a.left - 1 || p > a.right + 1) : (p < a.top - 1 || p > a.bottom + 1)) continue;
            ctx.save();
            ctx.strokeStyle = l.color; ctx.fillStyle = l.color; ctx.lineWidth = 1.5; ctx.setLineDash([6, 4]);
            ctx.beginPath();
            if (vertical) { ctx.moveTo(p, a.top); ctx.lineTo(p, a.bottom); }
            else { ctx.moveTo(a.left, p); ctx.lineTo(a.right, p); }
            ctx.stroke();
            ctx.setLineDash([]);
            ctx.font = '600 11px ' + Chart.defaults.font.family;
            if (!l.label) { ctx.restore(); continue; }
            const w = ctx.measureText(l.label).width;
            const tx = vertical ? p + 5 : a.right - 6 - w, ty = vertical ? a.top + 12 : p - 6;
            ctx.fillStyle = 'rgba(255,255,255,0.85)';
            ctx.fillRect(tx - 3, ty - 10, w + 6, 14);
            ctx.fillStyle = l.color;
            ctx.textAlign = 'left';
            ctx.fillText(l.label, tx, ty);
            ctx.restore();
          }
        },
      };
    }

    // ---- cost against attainment ----
    const target = cfg.target_percent.requests;
    const oracleGpuH = data.oracle ? data.oracle.gpu_hours : null;
    const forTarget = data.oracle && data.oracle.for_target && data.oracle.for_target.reached
                          ? data.oracle.for_target.gpu_hours : null;
    const scatterSets = families.map((fam) => {
      const idx = policies.map((p, i) => i).filter((i) => policies[i].family === fam)
                          .sort((a, b) => policies[a].gpu_hours - policies[b].gpu_hours);
      const famColor = colors[idx[Math.floor(idx.length / 2)]];
      return {
        label: fam,
        data: idx.map((i) => ({ x: policies[i].gpu_hours, y: 100 * policies[i].slo_attainment, i: i })),
        showLine: idx.length > 1,
        borderColor: faded(famColor),
        borderWidth: 1,
        pointRadius: 6, pointHoverRadius: 8, pointBorderWidth: 2,
        pointBorderColor: idx.map((i) => colors[i]),
        pointBackgroundColor: idx.map((i) => policies[i].meets_target ? colors[i] : '#ffffff'),
        backgroundColor: famColor,
      };
    });
    // Each point's name beside it, at the first of a few places (nearer first; the farther ones
    // with a leader line) that overlaps no other point or name; left out when none is free (the
    // tooltip and the table still name it).
    const pointLabels = {
      id: 'pointLabels',
      afterDatasetsDraw(chart) {
        const ctx = chart.ctx, area = chart.chartArea;
        ctx.save();
        ctx.font = '11px ' + Chart.defaults.font.family;
        ctx.textBaseline = 'middle';
        const points = [];
        chart.data.datasets.forEach((ds, di) => {
          if (ds.ref || !chart.isDatasetVisible(di)) return;
          chart.getDatasetMeta(di).data.forEach((el, k) => points.push({ x: el.x, y: el.y, i: ds.data[k].i }));
        });
        const taken = points.map((p) => ({ l: p.x - 7, r: p.x + 7, t: p.y - 7, b: p.y + 7 }));
        const overlaps = (b) => taken.some((o) => b.l < o.r && o.l < b.r && b.t < o.b && o.t < b.b);
        const h = 16;  // the text and a little air
        for (const p of points) {
          const text = policies[p.i].policy;
          const w = ctx.measureText(text).width;
          const places = [[9, -9], [9, 9], [-9 - w, -9], [-9 - w, 9], [9, 0], [-9 - w, 0], [-w / 2, -17],
                          [-w / 2, 17]];
          for (const d of [30, 48, 66]) {
            places.push([12, -d], [12, d], [-12 - w, -d], [-12 - w, d], [d, 0], [-d - w, 0]);
          }
          for (const [dx, dy] of places) {
            const box = { l: p.x + dx - 1, r: p.x + dx + w + 1, t: p.y + dy - h / 2, b: p.y + dy + h / 2 };
            const inside = box.l >= area.left && box.r <= area.right && box.t >= area.top - 16 && box.b <= area.bottom;
            if (!inside || overlaps(box)) continue;
            taken.push(box);
            if (Math.abs(dy) > 20 || Math.abs(dx) > 20 + (dx < 0 ? w : 0)) {
              ctx.strokeStyle = '#aab2bf';
              ctx.lineWidth = 0.8;
              ctx.beginPath();
              ctx.moveTo(p.x, p.y);
              ctx.lineTo(dx < 0 ? box.r : box.l, (box.t + box.b) / 2);
              ctx.stroke();
            }
            ctx.fillStyle = '#3a4454';
            ctx.textAlign = 'left';
            ctx.fillText(text, box.l + 1, (box.t + box.b) / 2);
            break;
          }
        }
        ctx.restore();
      },
    };
    const allX = policies.map((p) => p.gpu_hours).concat(oracleGpuH === null ? [] : [oracleGpuH])
                     .concat(forTarget === null ? [] : [forTarget]);
    const allY = policies.map((p) => 100 * p.slo_attainment).concat([target]);
    const yMin = Math.max(0, Math.floor((Math.min(...allY) - 3) / 5) * 5);
    // The reference lines are drawn across the plot by refLines; their legend entries are empty
    // datasets, so the legend names them and toggles them.
    const scatterLines = [];
    scatterSets.push({ label: 'target: ' + target + '% of requests', data: [], ref: true, pointStyle: 'line',
                       borderColor: '#c0392b', backgroundColor: '#c0392b', borderWidth: 2 });
    scatterLines.push({ axis: 'y', value: target, color: '#c0392b', dataset: scatterSets.length - 1 });
    if (oracleGpuH !== null) {
      scatterSets.push({ label: 'zero-lag oracle: ' + oracleGpuH.toFixed(3) + ' GPU-h', data: [], ref: true,
                         pointStyle: 'line', borderColor: '#6b7485', backgroundColor: '#6b7485', borderWidth: 2 });
      scatterLines.push({ axis: 'x', value: oracleGpuH, color: '#6b7485', dataset: scatterSets.length - 1 });
    }
    if (forTarget !== null) {
      scatterSets.push({ label: 'oracle for the target: ' + forTarget.toFixed(3) + ' GPU-h', data: [], ref: true,
                         pointStyle: 'line', borderColor: '#2e8b57', backgroundColor: '#2e8b57', borderWidth: 2 });
      scatterLines.push({ axis: 'x', value: forTarget, color: '#2e8b57', dataset: scatterSets.length - 1 });
    }
    charts.push(new Chart(document.getElementById('chart-scatter'), {
      type: 'scatter',
      data: { datasets: scatterSets },
      options: {
        layout: { padding: { top: 16 } },
        scales: {
          x: { beginAtZero: true, suggestedMax: Math.max(...allX) * 1.08,
               title: { display: true, text: 'cost (GPU-hours)' } },
          y: { min: yMin, max: 100, title: { display: true, text: 'SLO attainment (% of requests)' } },
        },
        plugins: {
          legend: { position: 'right', labels: { usePointStyle: true } },
          tooltip: { callbacks: { label: (c) => {
            const p = policies[c.raw.i];
            return p.policy + ': ' + p.gpu_hours.toFixed(3) + ' GPU-h, ' + (100 * p.slo_attainment).toFixed(2) +
                   '% of requests, ' + (100 * p.minute_share).toFixed(1) + '% of minutes, target ' +
                   (p.meets_target ? 'met' : 'missed');
          } } },
        },
      },
      plugins: [refLines(scatterLines), pointLabels],
    }));

    // ---- traffic (the same for every policy) ----
    const tr = data.traffic;
    const pts = (t, ys) => ys.map((y, k) => ({ x: minutes(t[k]), y: y }));
    charts.push(new Chart(document.getElementById('chart-traffic'), {
      type: 'line',
      data: { datasets: [
        { label: 'arrivals (req/s)', data: pts(tr.t, tr.arrival_rps), borderColor: '#1f2a3c', yAxisID: 'y' },
        { label: 'prompt tokens/s', data: pts(tr.t, tr.prompt_tokens_per_s), borderColor: '#2b8cbe', yAxisID: 'y1' },
        { label: 'output tokens/s', data: pts(tr.t, tr.output_tokens_per_s), borderColor: '#e6863b', yAxisID: 'y1' },
      ] },
      options: {
        interaction: { mode: 'index', intersect: false },
        scales: {
          x: xAxis,
          y: { beginAtZero: true, title: { display: true, text: 'arrival rate (req/s)' } },
          y1: { beginAtZero: true, position: 'right', grid: { drawOnChartArea: false },
                title: { display: true, text: 'token rate (tokens/s)' } },
        },
        plugins: { legend: { position: 'top', labels: { usePointStyle: true, pointStyle: 'line' } } },
      },
    }));

    // ---- per-policy time series: one dataset (or a few) per policy, shown for the picked ones ----
    const timelines = data.timelines;
    const byPolicy = [];  // [chart, dataset index, policy index]
    function seriesChart(id, yTitle, makeSets, extra) {
      const datasets = [];
      timelines.forEach((tl, i) => {
        for (const ds of makeSets(tl, i)) { ds.policy = i; datasets.push(ds); }
      });
      if (extra && extra.datasets) for (const ds of extra.datasets) datasets.push(ds);
      const chart = new Chart(document.getElementById(id), {
        type: 'line',
        data: { datasets: datasets },
        options: {
          parsing: true,
          interaction: { mode: 'nearest', intersect: false },
          scales: { x: xAxis, y: Object.assign({ title: { display: true, text: yTitle } },
                                               (extra && extra.y) || { beginAtZero: true }) },
          plugins: {
            legend: { display: false },
            tooltip: { callbacks: {
              title: (items) => items.length ? 't = ' + items[0].parsed.x.toFixed(2) + ' min' : '',
              label: (c) => c.dataset.tooltip ? c.dataset.tooltip(c) :
                            c.dataset.label + ': ' + fmt(c.parsed.y, (extra && extra.digits) || 0),
            } },
          },
        },
        plugins: extra && extra.lines ? [refLines(extra.lines)] : [],
      });
      datasets.forEach((ds, k) => { if (ds.policy !== undefined) byPolicy.push([chart, k, ds.policy]); });
      charts.push(chart);
    }
    const name = (i) => policies[i].policy;

    // Replicas: ready (solid), ready + warming (dashed), scale events (triangles at the new
    // desired count), and the oracles' fleets per minute (grey and green steps).
    const oracleSets = [];
    if (data.oracle_minutes.length) {
      const om = data.oracle_minutes;
      const steps = om.map((n, k) => ({ x: k, y: n })).concat([{ x: om.length, y: om[om.length - 1] }]);
      oracleSets.push({ label: 'zero-lag oracle', data: steps, stepped: 'after', borderColor: '#8d96a6',
                        borderDash: [2, 3], borderWidth: 1.5 });
    }
    // And the oracle for the target's fleet per minute (green steps), when it reached the target.
    const ft = data.oracle && data.oracle.for_target;
    if (ft && ft.reached && ft.replicas_by_minute.length) {
      const fm = ft.replicas_by_minute;
      const steps = fm.map((n, k) => ({ x: k, y: n })).concat([{ x: fm.length, y: fm[fm.length - 1] }]);
      oracleSets.push({ label: 'oracle for the target', data: steps, stepped: 'after', borderColor: '#2e8b57',
                        borderDash: [2, 3], borderWidth: 1.5 });
    }
    seriesChart('chart-replicas', 'replicas', (tl, i) => [
      { label: name(i) + ' ready', data: pts(tl.t, tl.ready), borderColor: colors[i], stepped: 'before' },
      { label: name(i) + ' ready + warming', data: pts(tl.t, tl.ready.map((r, k) => r + tl.warming[k])),
        borderColor: colors[i], borderDash: [5, 4], borderWidth: 1.2, stepped: 'before' },
      { label: name(i) + ' scale events', type: 'scatter', showLine: false,
        data: tl.events.map((e) => ({ x: minutes(e.t), y: e.to, e: e })),
        pointStyle: 'triangle', pointRadius: tl.events.map((e) => 5), pointHoverRadius: 7,
        pointRotation: tl.events.map((e) => (e.to > e.from ? 0 : 180)),
        borderColor: colors[i], backgroundColor: colors[i],
        tooltip: (c) => name(i) + ': ' + c.raw.e.from + ' \u2192 ' + c.raw.e.to +
                        (c.raw.e.reason ? ' (' + c.raw.e.reason + ')' : '') },
    ], { datasets: oracleSets, y: { beginAtZero: true, ticks: { precision: 0 } } });

    const sloMs = cfg.slo.ttft_ms;
    seriesChart('chart-ttft', 'p90 TTFT (ms, log scale)', (tl, i) => [
      { label: name(i), data: pts(tl.t, tl.ttft_p90_ms), borderColor: colors[i], spanGaps: false },
    ], { y: { type: 'logarithmic' }, digits: 1,
         lines: [{ axis: 'y', value: sloMs, color: '#c0392b', label: 'SLO ' + sloMs + ' ms' }] });

    seriesChart('chart-kv', 'mean KV-cache use (%)', (tl, i) => [
      { label: name(i), data: pts(tl.t, tl.kv.map((v) => 100 * v)), borderColor: colors[i] },
    ], { y: { beginAtZero: true, suggestedMax: 100 }, digits: 1 });

    seriesChart('chart-queue', 'waiting requests', (tl, i) => [
      { label: name(i), data: pts(tl.t, tl.waiting), borderColor: colors[i] },
    ]);

    // What the twin said (solid) and what the truth served (dashed) over each decision's span.
    if (document.getElementById('chart-twin')) {
      seriesChart('chart-twin', 'attainment (% of the span\'s requests)', (tl, i) => tl.twin.t.length ? [
        { label: name(i) + ': the twin said', data: pts(tl.twin.t, tl.twin.predicted), borderColor: colors[i] },
        { label: name(i) + ': the truth served', data: pts(tl.twin.t, tl.twin.observed), borderColor: colors[i],
          borderDash: [5, 4], borderWidth: 1.2 },
      ] : [], { y: { suggestedMax: 100 }, digits: 1,
                lines: [{ axis: 'y', value: cfg.slo.percentile, color: '#c0392b',
                          label: 'SLO p' + cfg.slo.percentile }] });
    }

    // The forecast each decision made for the span it judged (solid) and the arrival rate that
    // came over that span (dashed), at the span's middle.
    if (document.getElementById('chart-forecast')) {
      seriesChart('chart-forecast', 'arrival rate (req/s)', (tl, i) => tl.plan.span_t.length ? [
        { label: name(i) + ': forecast', data: pts(tl.plan.span_t, tl.plan.forecast_rps), borderColor: colors[i] },
        { label: name(i) + ': came', data: pts(tl.plan.span_t, tl.plan.came_rps), borderColor: colors[i],
          borderDash: [5, 4], borderWidth: 1.2 },
      ] : [], { y: { beginAtZero: true }, digits: 1 });
      // The SLO budget's record over the target's window (requests solid, minutes dashed) and
      // the aim the decisions set (dotted), against the target.
      seriesChart('chart-budget', 'percent', (tl, i) => tl.plan.t.length ? [
        { label: name(i) + ': requests in time', data: pts(tl.plan.t, tl.plan.budget_requests), borderColor: colors[i] },
        { label: name(i) + ': minutes meeting', data: pts(tl.plan.t, tl.plan.budget_minutes), borderColor: colors[i],
          borderDash: [5, 4], borderWidth: 1.2 },
        { label: name(i) + ': aim', data: pts(tl.plan.t, tl.plan.aim), borderColor: colors[i],
          borderDash: [1, 3], borderWidth: 1.2 },
      ] : [], { y: { suggestedMin: 85, suggestedMax: 100 }, digits: 2,
                lines: [{ axis: 'y', value: cfg.target_percent.requests, color: '#c0392b',
                          label: 'target ' + cfg.target_percent.requests + '%' }] });
    }

    seriesChart('chart-rejected', 'rejected requests (req/s)', (tl, i) => [
      { label: name(i), data: pts(tl.t, tl.rejected_rps), borderColor: colors[i] },
    ], { y: { beginAtZero: true, suggestedMax: 1 }, digits: 2 });

    // ---- the picker ----
    const picker = document.getElementById('picker');
    const chips = [];
    policies.forEach((p, i) => {
      const label = document.createElement('label');
      label.className = 'chip';
      const box = document.createElement('input');
      box.type = 'checkbox';
      const sw = document.createElement('span');
      sw.className = 'swatch';
      sw.style.background = colors[i];
      label.append(box, sw, document.createTextNode(p.policy));
      box.addEventListener('change', apply);
      picker.append(label);
      chips.push({ label: label, box: box });
    });
    // Suggested: twinscale's policies and the cheapest member of each family meeting the target
    // (the first member of a family where none meets it), at most 8.
    const suggested = new Set();
    policies.forEach((p, i) => { if (p.family.startsWith('twinscale')) suggested.add(i); });
    for (const b of data.cheapest_meeting_target) {
      const want = b.policy !== null ? b.policy : (policies.find((p) => p.family === b.family) || {}).policy;
      const i = policies.findIndex((p) => p.policy === want);
      if (i >= 0) suggested.add(i);
    }
    if (!suggested.size && policies.length) suggested.add(0);
    const suggestedList = Array.from(suggested).sort((a, b) => a - b).slice(0, 8);
    function pick(which) {
      chips.forEach((c, i) => { c.box.checked = which === 'all' || (which === 'suggested' && suggestedList.includes(i)); });
      apply();
    }
    document.getElementById('pick-suggested').addEventListener('click', () => pick('suggested'));
    document.getElementById('pick-all').addEventListener('click', () => pick('all'));
    document.getElementById('pick-none').addEventListener('click', () => pick('none'));
    function apply() {
      chips.forEach((c) => c.label.classList.toggle('off', !c.box.checked));
      const touched = new Set();
      for (const [chart, k, i] of byPolicy) {
        chart.setDatasetVisibility(k, chips[i].box.checked);
        touched.add(chart);
      }
      touched.forEach((c) => c.update());
    }
    pick('suggested');
)js";

}  // namespace

std::string ReportHtml(const ReportHeader& header, const std::vector<ReplaySummary>& summaries,
                       const OracleResult* oracle, const std::vector<ReplayResult>& results,
                       std::string_view chartjs) {
  // Header.
  std::string out;
  absl::StrAppend(
      &out, "<header>\n<h1>twinscale replay report</h1>\n<p class=\"sub\">",
      HtmlEscape(header.trace),
      absl::StrFormat(" &middot; %d requests over %.0f s", header.requests, header.span_seconds),
      "</p>\n<dl>\n");
  auto fact = [&out](const char* key, const std::string& value_html) {
    absl::StrAppend(&out, "<div><dt>", key, "</dt><dd>", value_html, "</dd></div>\n");
  };
  fact("deployment", HtmlEscape(header.deployment));
  fact("SLO", SloText(header.slo));
  fact("target", absl::StrFormat("&ge; %g%% of requests, &ge; %g%% of minutes",
                                 header.target.requests * 100, header.target.minutes * 100));
  fact("truth", HtmlEscape(header.truth));
  fact("seed", absl::StrCat(header.seed));
  fact("start", HtmlEscape(PreRollText(header.pre_roll, header.pre_roll_from_history)));
  if (oracle != nullptr) fact("oracle", absl::StrFormat("%.3f GPU-h", oracle->gpu_hours));
  if (oracle != nullptr && oracle->for_share && oracle->for_share->reached) {
    fact("oracle for the target", absl::StrFormat("%.3f GPU-h", oracle->for_share->gpu_hours));
  }
  out += "</dl>\n</header>\n<main>\n";

  // Cost and attainment.
  out +=
      "<section id=\"cost\">\n<h2>Cost against SLO attainment</h2>\n"
      "<p class=\"note\">Every policy and every member of each baseline family: GPU-hours against "
      "the share of all requests within the TTFT SLO (rejected ones count as misses). Filled "
      "points meet the target (requests and minutes), hollow ones miss it. The dashed lines are "
      "the attainment target and the zero-lag oracle's GPU-hours, the lower bound for any policy "
      "that meets the SLO.</p>\n"
      "<figure><div class=\"chart tall\"><canvas id=\"chart-scatter\" role=\"img\" "
      "aria-label=\"GPU-hours against SLO attainment per policy\"></canvas></div></figure>\n"
      "<h3>Summary</h3>\n";
  out += SummaryTable(header, summaries, oracle);
  out += "</section>\n";

  // Over time.
  out +=
      "<section id=\"time\">\n<h2>Over time</h2>\n"
      "<p class=\"note\">One point per decision (the sync period), about the interval that ends "
      "there. Pick the policies to plot; the colours are those of the table.</p>\n"
      "<div id=\"picker\"><button id=\"pick-suggested\" type=\"button\">suggested</button>"
      "<button id=\"pick-all\" type=\"button\">all</button>"
      "<button id=\"pick-none\" type=\"button\">none</button><span class=\"sep\"></span></div>\n"
      "<div class=\"grid\">\n"
      "<figure><figcaption>Traffic</figcaption><p class=\"caption\">the trace's arrivals and "
      "their tokens per second; the same for every policy</p><div class=\"chart\"><canvas "
      "id=\"chart-traffic\"></canvas></div></figure>\n"
      "<figure><figcaption>Replicas</figcaption><p class=\"caption\">solid: ready; dashed: ready "
      "+ warming; &#9650;&#9660; scale events at the new desired count; grey steps: the zero-lag "
      "oracle's fleet per minute; green steps: the oracle for the target's</p>"
      "<div class=\"chart\"><canvas id=\"chart-replicas\"></canvas></div></figure>\n"
      "<figure><figcaption>p90 TTFT against the SLO</figcaption><p class=\"caption\">of the "
      "requests whose first token came in the interval; gaps: none did</p>"
      "<div class=\"chart\"><canvas id=\"chart-ttft\"></canvas></div></figure>\n"
      "<figure><figcaption>KV-cache use</figcaption><p class=\"caption\">mean over the ready "
      "replicas</p><div class=\"chart\"><canvas id=\"chart-kv\"></canvas></div></figure>\n"
      "<figure><figcaption>Queue depth</figcaption><p class=\"caption\">requests waiting in the "
      "engines' queues and the gateway</p>"
      "<div class=\"chart\"><canvas id=\"chart-queue\"></canvas></div></figure>\n"
      "<figure><figcaption>Rejections</figcaption><p class=\"caption\">counted at arrival "
      "time";
  int64_t rejected = 0;
  for (const ReplaySummary& s : summaries) rejected += s.rejected;
  if (rejected == 0) out += "; no policy had any in this run";
  out += "</p><div class=\"chart\"><canvas id=\"chart-rejected\"></canvas></div></figure>\n";
  bool any_twin = false;
  for (const ReplayResult& r : results) any_twin = any_twin || r.summary.twin_error.has_value();
  if (any_twin) {
    out +=
        "<figure><figcaption>What the twin said, what happened</figcaption><p class=\"caption\">"
        "solid: the share of requests the twin forecast within the SLO, at each decision, for the "
        "fleet the decision left, over the decision's horizon (from the warm-up on when it kept or "
        "added capacity); dashed: the share the truth served over the same span; settled "
        "decisions only";
    for (const ReplaySummary& s : summaries) {
      if (!s.twin_error) continue;
      const TwinError& e = *s.twin_error;
      absl::StrAppendFormat(
          &out,
          "<br>%s: bias %+.1f points, MAE %.1f over %d decisions; where the arrivals came as "
          "forecast, %+.1f and %.1f over %d; above the forecast, %+.1f and %.1f over %d; below "
          "it, %+.1f and %.1f over %d",
          HtmlEscape(s.policy), e.attainment_bias_points, e.attainment_mae_points, e.decisions,
          e.rate_as_forecast.attainment_bias_points, e.rate_as_forecast.attainment_mae_points,
          e.rate_as_forecast.decisions, e.rate_above_forecast.attainment_bias_points,
          e.rate_above_forecast.attainment_mae_points, e.rate_above_forecast.decisions,
          e.rate_below_forecast.attainment_bias_points, e.rate_below_forecast.attainment_mae_points,
          e.rate_below_forecast.decisions);
    }
    out +=
        "</p>"
        "<div class=\"chart\"><canvas id=\"chart-twin\"></canvas></div></figure>\n"
        "<figure><figcaption>The forecast and the arrivals that came</figcaption><p "
        "class=\"caption\">solid: the mean arrival rate each decision asked the twin about over "
        "the span it judged (its forecast, scaled by the forecast margin when one applied); "
        "dashed: the rate that arrived over that span; both at the span's middle</p>"
        "<div class=\"chart\"><canvas id=\"chart-forecast\"></canvas></div></figure>\n"
        "<figure><figcaption>The SLO budget</figcaption><p class=\"caption\">the record each "
        "decision read over the target's window (<code>spec.slo.target.window</code>, from the "
        "start of the pre-roll): solid, the share of requests in time; dashed, the share of "
        "minutes meeting the percentile; dotted, the aim the decision set its forecasts</p>"
        "<div class=\"chart\"><canvas id=\"chart-budget\"></canvas></div></figure>\n";
  }
  out += "</div>\n</section>\n";

  // Configuration.
  out += "<section id=\"config\">\n<h2>Configuration</h2>\n";
  out += ConfigSection(header, oracle, summaries);
  out += "</section>\n</main>\n";

  return ChartPageHtml({
      .title = absl::StrCat("twinscale replay: ", HtmlEscape(header.trace)),
      .style = kStyle,
      .body = std::move(out),
      .footer = "Written by <code>twinscale replay --out</code>; the same numbers are in "
                "summary.json and timeline.csv. Charts: Chart.js, inlined.",
      .data = ChartData(header, summaries, oracle, results),
      .chartjs = chartjs,
      .build = kBuild,
  });
}

absl::StatusOr<std::string> ReadChartJs(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (file == nullptr) {
    const int err = errno;
    if (err == ENOENT) {
      return absl::NotFoundError(
          absl::StrCat("Chart.js not found at ", path,
                       " (install the Debian package libjs-chart.js, or point --chartjs or ",
                       kChartJsEnv, " at chart.min.js / chart.umd.js)"));
    }
    return absl::ErrnoToStatus(err, absl::StrCat("cannot read Chart.js at ", path));
  }
  std::string text;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, file.get())) > 0) text.append(buf, n);
  if (std::ferror(file.get())) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot read Chart.js at ", path));
  }
  if (text.empty())
    return absl::FailedPreconditionError(absl::StrCat("Chart.js at ", path, " is empty"));
  return text;
}

absl::Status WriteReportHtml(const std::string& dir, const ReportHeader& header,
                             const std::vector<ReplaySummary>& summaries,
                             const OracleResult* oracle, const std::vector<ReplayResult>& results,
                             const std::string& chartjs_path) {
  absl::StatusOr<std::string> chartjs = ReadChartJs(chartjs_path);
  if (!chartjs.ok()) return chartjs.status();
  return WriteReportFile(absl::StrCat(dir, "/report.html"),
                         ReportHtml(header, summaries, oracle, results, *chartjs));
}

}  // namespace twinscale::replay
