// gitops runs the ecosystem's own code against objects and manifests this
// project produces, so the tests prove behaviour with the tools' logic rather
// than our reading of it:
//
//	gitops health <health.lua>    Argo CD's health Lua, in gopher-lua as Argo CD runs it
//	gitops kstatus                kstatus (Flux, kpt, cli-utils) status of each object
//	gitops rules <rule.yaml>      a PrometheusRule's groups through Prometheus's rule parser
//	gitops promql                 PromQL expressions (a JSON array of strings on stdin) parsed
//
// health and kstatus read a JSON array of objects on stdin; every command
// prints one JSON document on stdout.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	utiljson "k8s.io/apimachinery/pkg/util/json"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "gitops: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: gitops health <health.lua> | kstatus | rules <rule.yaml> | promql")
	}
	var out any
	var err error
	switch args[0] {
	case "health":
		if len(args) != 2 {
			return fmt.Errorf("usage: gitops health <health.lua>")
		}
		out, err = healthOfObjects(args[1], stdin)
	case "kstatus":
		out, err = kstatusOfObjects(stdin)
	case "promql":
		out, err = checkExprs(stdin)
	case "rules":
		if len(args) != 2 {
			return fmt.Errorf("usage: gitops rules <rule.yaml>")
		}
		out, err = checkRules(args[1])
	default:
		return fmt.Errorf("unknown command %q", args[0])
	}
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(out)
}

func readObjects(stdin io.Reader) ([]map[string]any, error) {
	raw, err := io.ReadAll(stdin)
	if err != nil {
		return nil, err
	}
	// As the API machinery decodes objects: whole numbers as int64, which kstatus requires.
	var objects []map[string]any
	if err := utiljson.Unmarshal(raw, &objects); err != nil {
		return nil, fmt.Errorf("reading a JSON array of objects on stdin: %w", err)
	}
	return objects, nil
}
