// helm-render renders a Helm 3 chart the way `helm template` does, for machines without Helm (it
// is not packaged for Debian bookworm): Go's text/template with sprig from Debian's packages and
// the Helm built-ins in engine.go. twinscale's tests and hack/generate-deploy.sh use it; it is not
// a replacement for Helm (no hooks, no subcharts, no values schema, no cluster access).
//
//	helm-render [--name twinscale] [--namespace twinscale-system] [-f values.yaml ...]
//	            [--set key.path=value ...] [--output-dir DIR | --notes] CHART_DIR
//
// Values as Helm combines them: the chart's values.yaml, then each -f file left to right, then each
// --set (which wins over every file, whatever the order on the command line). A --set value is
// typed as Helm types it: true and false are booleans, null deletes the key, an integer (without a
// leading zero) is a number, anything else a string. Only one key=value per --set, and no lists:
// Helm's commas, [index] and escapes are refused rather than read differently.
//
// Output: without --output-dir, every non-empty template as `helm template` prints it
// ("---\n# Source: <chart>/templates/<path>\n<content>"), in path order (Helm orders by kind);
// with --output-dir, each template's output in DIR/<path relative to templates/>; with --notes,
// the rendered NOTES.txt. Exit status 1 and a message on stderr for any error (a failed
// `required`, a template error, a bad values file); 2 for bad usage.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

type valueFiles []string

func (v *valueFiles) String() string     { return strings.Join(*v, ",") }
func (v *valueFiles) Set(s string) error { *v = append(*v, s); return nil }

func main() {
	var files valueFiles
	name := flag.String("name", "twinscale", "release name (.Release.Name)")
	namespace := flag.String("namespace", "default", "release namespace (.Release.Namespace)")
	outputDir := flag.String("output-dir", "", "write each template's output to DIR/<path>")
	notes := flag.Bool("notes", false, "print the rendered NOTES.txt instead of the manifests")
	flag.Var(&files, "f", "values file, repeatable; later files win (as helm -f)")
	flag.Var(&files, "values", "same as -f")
	var sets valueFiles
	flag.Var(&sets, "set", "key.path=value, repeatable; wins over every -f file (as helm --set)")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: helm-render [--name N] [--namespace NS] [-f values.yaml]... "+
			"[--set key=value]... [--output-dir DIR | --notes] CHART_DIR\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 || (*outputDir != "" && *notes) {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *name, *namespace, files, sets, *outputDir, *notes); err != nil {
		fmt.Fprintf(os.Stderr, "helm-render: %v\n", err)
		os.Exit(1)
	}
}

func run(chartDir, name, namespace string, files, sets []string, outputDir string,
	notes bool) error {
	meta, err := readChartMetadata(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		return err
	}
	defaults, err := readValues(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		return err
	}
	user := map[string]interface{}{}
	for _, f := range files {
		v, err := readValues(f)
		if err != nil {
			return err
		}
		user = mergeMaps(user, v)
	}
	for _, s := range sets {
		v, err := parseSet(s)
		if err != nil {
			return err
		}
		user = mergeMaps(user, v)
	}
	values := coalesce(user, defaults, "")
	rel := Release{Name: name, Namespace: namespace, Service: "Helm", IsInstall: true, Revision: 1}
	engine, err := NewEngine(chartDir, meta, values, rel)
	if err != nil {
		return err
	}
	if notes {
		text, err := engine.RenderNotes()
		if err != nil {
			return err
		}
		fmt.Print(text)
		return nil
	}
	rendered, err := engine.RenderAll()
	if err != nil {
		return err
	}
	for _, r := range rendered {
		if outputDir == "" {
			fmt.Printf("---\n# Source: %s/templates/%s\n%s", meta.Name, r.Path, r.Content)
			continue
		}
		path := filepath.Join(outputDir, filepath.FromSlash(r.Path))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(r.Content), 0o644); err != nil {
			return err
		}
	}
	return nil
}
