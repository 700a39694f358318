package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"
)

type ruleReport struct {
	Group  string `json:"group"`
	Alert  string `json:"alert,omitempty"`
	Record string `json:"record,omitempty"`
	// Metrics are the metric names the expression selects.
	Metrics []string `json:"metrics"`
}

type rulesReport struct {
	Rules []ruleReport `json:"rules"`
}

// checkRules validates a PrometheusRule manifest's spec.groups as promtool
// check rules does (rulefmt: names, durations, templates, PromQL) and lists
// the metric names each rule's expression selects.
func checkRules(path string) (*rulesReport, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var manifest struct {
		Kind string    `yaml:"kind"`
		Spec yaml.Node `yaml:"spec"`
	}
	if err := yaml.Unmarshal(raw, &manifest); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if manifest.Kind != "PrometheusRule" {
		return nil, fmt.Errorf("%s: kind is %q, want PrometheusRule", path, manifest.Kind)
	}
	spec, err := yaml.Marshal(&manifest.Spec)
	if err != nil {
		return nil, err
	}
	promql := parser.NewParser(parser.Options{})
	groups, errs := rulefmt.Parse(spec, false, model.UTF8Validation, promql, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s: %v", path, errs)
	}
	report := &rulesReport{Rules: []ruleReport{}}
	for _, group := range groups.Groups {
		for _, rule := range group.Rules {
			expr, err := promql.ParseExpr(rule.Expr)
			if err != nil {
				return nil, fmt.Errorf("%s: group %s: %w", path, group.Name, err)
			}
			metrics := metricNames(expr)
			report.Rules = append(report.Rules, ruleReport{Group: group.Name, Alert: rule.Alert, Record: rule.Record, Metrics: metrics})
		}
	}
	return report, nil
}

// metricNames lists the metric names an expression selects, sorted.
func metricNames(expr parser.Expr) []string {
	names := map[string]bool{}
	for _, selector := range parser.ExtractSelectors(expr) {
		for _, matcher := range selector {
			if matcher.Name == "__name__" {
				names[matcher.Value] = true
			}
		}
	}
	metrics := make([]string, 0, len(names))
	for name := range names {
		metrics = append(metrics, name)
	}
	sort.Strings(metrics)
	return metrics
}

type exprReport struct {
	Metrics []string `json:"metrics"`
	Error   string   `json:"error,omitempty"`
}

// checkExprs parses each PromQL expression (a JSON array of strings on stdin),
// as Prometheus would on a dashboard's query, and lists the metric names it selects.
func checkExprs(stdin io.Reader) ([]exprReport, error) {
	var exprs []string
	if err := json.NewDecoder(stdin).Decode(&exprs); err != nil {
		return nil, fmt.Errorf("reading a JSON array of expressions on stdin: %w", err)
	}
	promql := parser.NewParser(parser.Options{})
	reports := make([]exprReport, 0, len(exprs))
	for _, text := range exprs {
		expr, err := promql.ParseExpr(text)
		if err != nil {
			reports = append(reports, exprReport{Metrics: []string{}, Error: err.Error()})
			continue
		}
		reports = append(reports, exprReport{Metrics: metricNames(expr)})
	}
	return reports, nil
}
