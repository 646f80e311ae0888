package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/policy"
	"github.com/wasmsched/wasmsched/host/sim"
)

func newSimulateCommand(logger func() hclog.Logger) *cobra.Command {
	var (
		configPath string
		output     string
		seed       uint64
		latency    time.Duration
	)
	cmd := &cobra.Command{
		Use:   "simulate MANIFEST...",
		Short: "Schedule the pods of Kubernetes manifests on an in-memory cluster",
		Long: `simulate reads Nodes, Pods, Namespaces, PriorityClasses, PodDisruptionBudgets and
the pods of Deployments, ReplicaSets and StatefulSets from
multi-document YAML files ("-" for standard input), runs the real scheduler —
queue, profiles, Wasm policy modules — against an in-memory cluster until
nothing more can be scheduled, and prints where each pod went or why it could
not go anywhere. When pods preempt others it also lists who preempted whom
on which node and how (delete, or evict through the Eviction API for
PodDisruptionBudget-guarded victims), and the timeline of the scheduler's
calls to the in-memory API (nominations, victim conditions, deletions,
evictions, events).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "table" && output != "json" {
				return fmt.Errorf("-o: want table or json, not %q", output)
			}
			cfg := config.Default()
			if configPath != "" {
				var err error
				if cfg, err = config.Load(configPath); err != nil {
					return err
				}
			}
			objs, err := sim.LoadFiles(args...)
			if err != nil {
				return err
			}
			rep, err := sim.Run(context.Background(), objs, sim.Options{Config: cfg, Seed: seed, APILatency: latency, Log: logger()})
			if err != nil {
				return err
			}
			if output == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			return printTable(cmd.OutOrStdout(), rep)
		},
	}
	cmd.Flags().StringVar(&configPath, "config", "", "profiles file (WasmSchedulerConfiguration); default: one default-scheduler profile")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json")
	cmd.Flags().Uint64Var(&seed, "seed", 1, "seed for breaking score ties")
	cmd.Flags().DurationVar(&latency, "api-latency", 0, "latency added to every write to the in-memory API (bindings, preemption calls)")
	return cmd
}

func printTable(w io.Writer, rep *sim.Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POD\tPROFILE\tNODE\tSTATUS")
	for _, p := range rep.Pods {
		node, status := p.Node, p.Status
		if node == "" {
			node = "-"
		}
		if p.Message != "" {
			// One pod, one line: a message may carry a guest's text.
			status += ": " + policy.GuestText(p.Message)
		}
		profile := p.Profile
		if profile == "" {
			profile = "-"
		}
		fmt.Fprintf(tw, "%s/%s\t%s\t%s\t%s\n", p.Namespace, p.Name, profile, node, status)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(rep.Preemptions) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nPREEMPTIONS")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PREEMPTOR\tVICTIM\tNODE\tHOW")
	for _, p := range rep.Preemptions {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Preemptor, p.Victim, p.Node, p.How)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nTIMELINE")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tCALL\tPOD\tNODE\tDETAIL")
	for _, e := range rep.Timeline {
		node, detail := e.Node, e.Detail
		if node == "" {
			node = "-"
		}
		if e.Err != "" {
			detail = "ERROR " + policy.GuestText(e.Err)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", e.Seq, e.Op, e.Pod, node, detail)
	}
	return tw.Flush()
}
