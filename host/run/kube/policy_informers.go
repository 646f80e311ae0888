package kube

import (
	"fmt"

	"github.com/hashicorp/go-hclog"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/wasmsched/wasmsched/host/engines/scheduling/scheduler"
	"github.com/wasmsched/wasmsched/host/internal/convert"
)

// watchPolicy adds the informers preemption needs to f: PodDisruptionBudgets
// (which victims would violate a budget, and how many disruptions each still
// allows) and PriorityClasses (their KEP-3280 disruption guard annotation).
// A budget with a selector the scheduler cannot represent, or a class with
// an invalid annotation, is logged and treated as absent (the class as
// having no guard), never fatal.
//
// RBAC: list and watch on policy/poddisruptionbudgets and
// scheduling.k8s.io/priorityclasses.
func watchPolicy(f informers.SharedInformerFactory, s *scheduler.Scheduler, log hclog.Logger) error {
	onPDB := func(obj any) {
		p, ok := obj.(*policyv1.PodDisruptionBudget)
		if !ok {
			return
		}
		ap, err := convert.PDB(p)
		if err != nil {
			log.Warn("ignoring PodDisruptionBudget the scheduler cannot represent", "pdb", p.Namespace+"/"+p.Name, "error", err)
			s.OnPDBDelete(p.Namespace, p.Name)
			return
		}
		s.OnPDB(ap)
	}
	pdbs := f.Policy().V1().PodDisruptionBudgets().Informer()
	if _, err := pdbs.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    onPDB,
		UpdateFunc: func(_, newObj any) { onPDB(newObj) },
		DeleteFunc: func(obj any) {
			if p, ok := unwrap(obj).(*policyv1.PodDisruptionBudget); ok {
				s.OnPDBDelete(p.Namespace, p.Name)
			}
		},
	}); err != nil {
		return fmt.Errorf("poddisruptionbudget informer: %w", err)
	}

	onClass := func(obj any) {
		pc, ok := obj.(*schedulingv1.PriorityClass)
		if !ok {
			return
		}
		g, err := convert.DisruptionGuard(pc)
		if err != nil {
			log.Warn("PriorityClass has an invalid disruption guard; treating it as unset", "priorityclass", pc.Name, "error", err)
		}
		s.OnPriorityClass(pc.Name, g)
	}
	classes := f.Scheduling().V1().PriorityClasses().Informer()
	if _, err := classes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    onClass,
		UpdateFunc: func(_, newObj any) { onClass(newObj) },
		DeleteFunc: func(obj any) {
			if pc, ok := unwrap(obj).(*schedulingv1.PriorityClass); ok {
				s.OnPriorityClassDelete(pc.Name)
			}
		},
	}); err != nil {
		return fmt.Errorf("priorityclass informer: %w", err)
	}
	return nil
}
