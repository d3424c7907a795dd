// Values and chart metadata, read as Helm 3 reads them: YAML through sigs.k8s.io/yaml (so every
// number is a float64, as in Helm), the chart's values.yaml coalesced with the user's files.

package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// ChartMetadata is the part of Chart.yaml templates read as .Chart (Helm's chart.Metadata keeps
// the same field names: .Chart.Name, .Chart.Version, .Chart.AppVersion).
type ChartMetadata struct {
	APIVersion  string   `json:"apiVersion"`
	Name        string   `json:"name"`
	Version     string   `json:"version"`
	AppVersion  string   `json:"appVersion"`
	Description string   `json:"description"`
	Type        string   `json:"type"`
	KubeVersion string   `json:"kubeVersion"`
	Home        string   `json:"home"`
	Keywords    []string `json:"keywords"`
	Sources     []string `json:"sources"`
}

func readChartMetadata(path string) (*ChartMetadata, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m ChartMetadata
	if err := yaml.UnmarshalStrict(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if m.APIVersion != "v2" {
		return nil, fmt.Errorf("%s: apiVersion must be v2 (Helm 3), got %q", path, m.APIVersion)
	}
	if m.Name == "" || m.Version == "" {
		return nil, fmt.Errorf("%s: name and version are required", path)
	}
	return &m, nil
}

// readValues reads one values file; an empty file is an empty map.
func readValues(path string) (map[string]interface{}, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	vals := map[string]interface{}{}
	if err := yaml.Unmarshal(data, &vals); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if vals == nil {
		vals = map[string]interface{}{}
	}
	return vals, nil
}

// parseSet reads one --set argument, "a.b.c=value", into the nested map {a: {b: {c: value}}},
// typing the value as Helm's strvals does: true/false a bool, null a nil (which deletes the key),
// an integer without a leading zero an int64, anything else a string. Helm's commas (several keys), [index] (lists) and
// backslash escapes are refused, so no argument is read differently from Helm.
func parseSet(arg string) (map[string]interface{}, error) {
	eq := strings.IndexByte(arg, '=')
	if eq <= 0 {
		return nil, fmt.Errorf("--set %q: want key.path=value", arg)
	}
	key, text := arg[:eq], arg[eq+1:]
	if strings.ContainsAny(arg, ",[]\\") {
		return nil, fmt.Errorf("--set %q: commas, [index] and escapes are not supported here "+
			"(one key=value per --set, or a -f file)", arg)
	}
	var value interface{} = text
	switch {
	case strings.EqualFold(text, "true") || strings.EqualFold(text, "false"):
		value = strings.EqualFold(text, "true")
	case strings.EqualFold(text, "null"):
		value = nil
	case text == "0":
		value = int64(0)
	case text != "" && text[0] != '0': // "0123" stays a string, as in Helm
		if n, err := strconv.ParseInt(text, 10, 64); err == nil {
			value = n
		}
	}
	parts := strings.Split(key, ".")
	for _, p := range parts {
		if p == "" {
			return nil, fmt.Errorf("--set %q: empty part in key %q", arg, key)
		}
	}
	out := map[string]interface{}{parts[len(parts)-1]: value}
	for i := len(parts) - 2; i >= 0; i-- {
		out = map[string]interface{}{parts[i]: out}
	}
	return out, nil
}

// mergeMaps merges b into a copy of a, b winning; nested maps merge (Helm's mergeMaps, used to
// combine several -f files left to right).
func mergeMaps(a, b map[string]interface{}) map[string]interface{} {
	out := make(map[string]interface{}, len(a))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if vm, ok := v.(map[string]interface{}); ok {
			if om, ok := out[k].(map[string]interface{}); ok {
				out[k] = mergeMaps(om, vm)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// coalesce fills user values with the chart's defaults (Helm's coalesceValues): a key the user
// left out takes the default, nested maps coalesce key by key, and a user's explicit null deletes
// the key (the way to switch a default off). Warnings go to stderr, as Helm prints them.
func coalesce(user, defaults map[string]interface{}, path string) map[string]interface{} {
	for key, def := range defaults {
		val, present := user[key]
		if !present {
			user[key] = def
			continue
		}
		if val == nil {
			delete(user, key)
			continue
		}
		um, userIsMap := val.(map[string]interface{})
		dm, defIsMap := def.(map[string]interface{})
		switch {
		case userIsMap && defIsMap:
			user[key] = coalesce(um, dm, path+key+".")
		case userIsMap != defIsMap && def != nil:
			fmt.Fprintf(os.Stderr, "warning: %s%s: a table and a non-table value do not merge; "+
				"the user's value wins\n", path, key)
		}
	}
	return user
}
