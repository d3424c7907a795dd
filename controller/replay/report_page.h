// What replay's and plan's report.html pages share: the page's frame (the head, the stylesheet
// common to both, the footer with the render check), the escaping that keeps text from a file (a
// policy or scenario name) from breaking out of the HTML or a <script> element, and the script
// that checks the page once its charts are drawn.
//
// The data is one JSON document in a <script type="application/json" id="report-data"> element,
// every '<' written as \u003c, so no text in it can close the element. Chart.js is inlined. The
// page's script wraps the page's own drawing code: it records every script error and
// console.error, parses the data, calls the page's `build(data)` (which pushes each Chart it draws
// onto `charts`), then checks that every chart's canvas has painted pixels and writes "rendered N
// charts" (or the first error, or the count of blank charts) into #render-status, with data-ok
// "true" or "false", for the browser tests.
//
// Pure; thread-safe.
#ifndef TWINSCALE_CONTROLLER_REPLAY_REPORT_PAGE_H_
#define TWINSCALE_CONTROLLER_REPLAY_REPORT_PAGE_H_

#include <string>
#include <string_view>

#include "nlohmann/json.hpp"

namespace twinscale::replay {

// `s` as HTML text, safe in element content and in a quoted attribute value.
std::string HtmlEscape(std::string_view s);

// `j` as the text of a <script type="application/json"> element: '<' only occurs inside JSON
// strings, where \u003c means the same character, so "</script" and "<!--" cannot appear. Invalid
// UTF-8 becomes U+FFFD rather than an exception.
std::string ScriptJson(const nlohmann::ordered_json& j);

// `js` as the text of an inline <script> element: "</script" (any case) and "<!--" get a backslash
// after the '<', which means the same inside a JavaScript string or comment (the only places they
// occur in library code).
std::string InlineScript(std::string_view js);

// One page's own parts.
struct ChartPage {
  std::string title;            // the <title>, as HTML (escaped by the caller)
  std::string_view style;       // CSS rules of this page, after the shared ones
  std::string body;             // the HTML between <body> and the footer
  std::string footer;           // the footer's HTML before "Render check: ..."
  nlohmann::ordered_json data;  // the #report-data document
  std::string_view chartjs;     // Chart.js's source (empty: the status reports it missing)
  // The body of the page's `function build(data)`: JavaScript that draws the charts, pushing each
  // Chart onto `charts` (Chart.defaults are set already: no animation, no fixed aspect ratio).
  std::string_view build;
};

// The whole page. Deterministic.
std::string ChartPageHtml(const ChartPage& page);

}  // namespace twinscale::replay

#endif  // TWINSCALE_CONTROLLER_REPLAY_REPORT_PAGE_H_
