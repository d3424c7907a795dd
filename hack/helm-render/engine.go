// The template engine: Go's text/template with sprig's functions and the Helm 3 built-ins a chart
// uses, each written to behave as Helm's own (helm.sh/helm/v3/pkg/engine):
//   - every file under templates/ is parsed into one template set, named "<chart>/templates/<path>",
//     so `define`d templates in _helpers.tpl are visible to all; files whose name starts with "_"
//     render nothing themselves; NOTES.txt is rendered only on request (as `helm install` prints it);
//   - the data of a render: .Values, .Release {Name, Namespace, Service, IsInstall, IsUpgrade,
//     Revision}, .Chart (Chart.yaml), .Files (the chart's other files: Get, GetBytes, Lines),
//     .Template {Name, BasePath};
//   - functions: sprig's TxtFuncMap without env and expandenv (Helm removes them), plus include,
//     tpl, required, fail, toYaml, fromYaml, toJson, fromJson, lookup (always empty, as in
//     `helm template`); a failed required or fail reads as Helm prints it, "execution error at
//     (<template>:<line>:<column>): <message>";
//   - missingkey=zero, and "<no value>" removed from the output, as Helm does when not --strict.
// Not implemented (a chart using them fails to parse: "function not defined"): .Capabilities,
// .Subcharts, toToml, fromYamlArray, fromJsonArray, .Files.Glob / AsConfig / AsSecrets, subcharts.

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"text/template"

	// Debian packages sprig v3 under its v2 import path (golang-github-masterminds-sprig-dev);
	// GOPATH mode resolves it there. In module mode this would be github.com/Masterminds/sprig/v3.
	"github.com/Masterminds/sprig"
	"sigs.k8s.io/yaml"
)

// Files is .Files: the chart's non-template files by path relative to the chart root.
type Files map[string][]byte

// Get returns a file's content as a string ("" if absent, as Helm does).
func (f Files) Get(name string) string { return string(f[name]) }

// GetBytes returns a file's content.
func (f Files) GetBytes(name string) []byte { return f[name] }

// Lines returns a file's lines.
func (f Files) Lines(name string) []string {
	if f[name] == nil {
		return []string{}
	}
	return strings.Split(strings.TrimRight(string(f[name]), "\n"), "\n")
}

// Release is .Release.
type Release struct {
	Name      string
	Namespace string
	Service   string
	IsInstall bool
	IsUpgrade bool
	Revision  int
}

// Engine renders one chart.
type Engine struct {
	chartName string
	tmpl      *template.Template
	templates []string // every template's name, sorted
	top       map[string]interface{}
}

// includeDepth bounds include/tpl recursion, as Helm does (its limit is 1000).
const maxIncludeDepth = 1000

func toYAML(v interface{}) string {
	data, err := yaml.Marshal(v)
	if err != nil {
		return "" // Helm swallows the error here too
	}
	return strings.TrimSuffix(string(data), "\n")
}

func fromYAML(s string) map[string]interface{} {
	m := map[string]interface{}{}
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

func toJSON(v interface{}) string {
	data, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(data)
}

func fromJSON(s string) map[string]interface{} {
	m := map[string]interface{}{}
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

// A message of `required` or `fail` travels inside these markers (Helm's warnWrap), so that
// cleanupExecError can find it in text/template's error chain and print it alone.
var warnRegex = regexp.MustCompile(`HELM\[(.*)\]HELM`)

func warnWrap(warn string) string { return "HELM[" + warn + "]HELM" }

// required fails the render with `warn` when val is nil or an empty string (Helm's required).
func required(warn string, val interface{}) (interface{}, error) {
	if val == nil {
		return val, errors.New(warnWrap(warn))
	}
	if s, ok := val.(string); ok && s == "" {
		return val, errors.New(warnWrap(warn))
	}
	return val, nil
}

// fail fails the render with msg (Helm replaces sprig's fail with this one).
func fail(msg string) (string, error) { return "", errors.New(warnWrap(msg)) }

// cleanupExecError turns the error of a failed `required` or `fail` into Helm's message,
// "execution error at (<template>:<line>:<column>): <message>", instead of text/template's chain
// of every include on the way, which quotes the call's source and so repeats the message. Other
// errors are returned as they are (Helm's cleanupExecError).
func cleanupExecError(err error) error {
	var exec template.ExecError
	if !errors.As(err, &exec) {
		return err
	}
	tokens := strings.SplitN(err.Error(), ": ", 3)
	if len(tokens) != 3 {
		return err
	}
	if parts := warnRegex.FindStringSubmatch(tokens[2]); len(parts) >= 2 {
		return fmt.Errorf("execution error at (%s): %s", tokens[1], parts[1])
	}
	return err
}

// NewEngine reads chartDir (Chart.yaml, templates/ and every other file as .Files) and prepares
// the data shared by all templates.
func NewEngine(chartDir string, meta *ChartMetadata, values map[string]interface{}, rel Release) (*Engine, error) {
	e := &Engine{chartName: meta.Name}
	files := Files{}
	sources := map[string]string{}
	err := filepath.Walk(chartDir, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(chartDir, path)
		rel = filepath.ToSlash(rel)
		if info.IsDir() {
			if rel == "charts" {
				return fmt.Errorf("%s: subcharts are not supported by this renderer", path)
			}
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		switch {
		case strings.HasPrefix(rel, "templates/"):
			sources[meta.Name+"/"+rel] = string(data)
		case rel == "Chart.yaml" || rel == "values.yaml" || rel == "values.schema.json":
			// Not part of .Files (Helm keeps them apart).
		default:
			files[rel] = data
		}
		return nil
	})
	if err != nil {
		return nil, err
	}

	e.tmpl = template.New("chart").Option("missingkey=zero")
	funcs := sprig.TxtFuncMap()
	delete(funcs, "env")
	delete(funcs, "expandenv")
	depth := 0
	funcs["include"] = func(name string, data interface{}) (string, error) {
		if depth >= maxIncludeDepth {
			return "", fmt.Errorf("include %q: rendering too deep (a template including itself?)", name)
		}
		depth++
		defer func() { depth-- }()
		var buf strings.Builder
		if err := e.tmpl.ExecuteTemplate(&buf, name, data); err != nil {
			return "", err
		}
		return buf.String(), nil
	}
	funcs["tpl"] = func(text string, data interface{}) (string, error) {
		if depth >= maxIncludeDepth {
			return "", fmt.Errorf("tpl: rendering too deep")
		}
		depth++
		defer func() { depth-- }()
		t, err := e.tmpl.Clone()
		if err != nil {
			return "", err
		}
		t, err = t.New("tpl").Parse(text)
		if err != nil {
			return "", fmt.Errorf("tpl: %v", err)
		}
		var buf strings.Builder
		if err := t.Execute(&buf, data); err != nil {
			return "", fmt.Errorf("tpl: %v", err)
		}
		return strings.ReplaceAll(buf.String(), "<no value>", ""), nil
	}
	funcs["required"] = required
	funcs["fail"] = fail
	funcs["toYaml"] = toYAML
	funcs["fromYaml"] = fromYAML
	funcs["toJson"] = toJSON
	funcs["fromJson"] = fromJSON
	funcs["lookup"] = func(apiVersion, kind, namespace, name string) (map[string]interface{}, error) {
		return map[string]interface{}{}, nil
	}
	e.tmpl.Funcs(funcs)

	for name := range sources {
		e.templates = append(e.templates, name)
	}
	sort.Strings(e.templates)
	for _, name := range e.templates {
		if _, err := e.tmpl.New(name).Parse(sources[name]); err != nil {
			return nil, err
		}
	}

	e.top = map[string]interface{}{
		"Values": values,
		"Release": map[string]interface{}{
			"Name": rel.Name, "Namespace": rel.Namespace, "Service": rel.Service,
			"IsInstall": rel.IsInstall, "IsUpgrade": rel.IsUpgrade, "Revision": rel.Revision,
		},
		"Chart": meta,
		"Files": files,
	}
	return e, nil
}

// Rendered is one template's output.
type Rendered struct {
	Path    string // relative to templates/, e.g. "controller/deployment.yaml"
	Content string
}

func (e *Engine) render(name string) (string, error) {
	data := make(map[string]interface{}, len(e.top)+1)
	for k, v := range e.top {
		data[k] = v
	}
	data["Template"] = map[string]interface{}{
		"Name": name, "BasePath": e.chartName + "/templates",
	}
	var buf bytes.Buffer
	if err := e.tmpl.ExecuteTemplate(&buf, name, data); err != nil {
		return "", cleanupExecError(err)
	}
	return strings.ReplaceAll(buf.String(), "<no value>", ""), nil
}

// RenderAll renders every template except partials (_*) and NOTES.txt, in path order. A template
// whose output is only whitespace is left out, as Helm leaves out empty manifests.
func (e *Engine) RenderAll() ([]Rendered, error) {
	var out []Rendered
	prefix := e.chartName + "/templates/"
	for _, name := range e.templates {
		rel := strings.TrimPrefix(name, prefix)
		base := filepath.Base(rel)
		if strings.HasPrefix(base, "_") || base == "NOTES.txt" {
			continue
		}
		text, err := e.render(name)
		if err != nil {
			return nil, err
		}
		if strings.TrimSpace(text) == "" {
			continue
		}
		out = append(out, Rendered{Path: rel, Content: strings.TrimSpace(text) + "\n"})
	}
	return out, nil
}

// RenderNotes renders templates/NOTES.txt ("" if the chart has none).
func (e *Engine) RenderNotes() (string, error) {
	name := e.chartName + "/templates/NOTES.txt"
	if e.tmpl.Lookup(name) == nil {
		return "", nil
	}
	return e.render(name)
}
