package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"k8s.io/client-go/rest"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/run/kube"
)

// TestServeSettingsFlagsWinOverTheConfiguration: a setting comes from
// its flag when the flag was given, else from the configuration, else
// from the flag's default.
func TestServeSettingsFlagsWinOverTheConfiguration(t *testing.T) {
	cfg, err := config.Parse([]byte(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: /etc/kubernetes/scheduler.conf
  qps: 80
  burst: 160
  contentType: application/vnd.kubernetes.protobuf
leaderElection:
  leaderElect: false
  leaseDuration: 30s
  renewDeadline: 20s
  retryPeriod: 4s
  resourceName: my-scheduler
  resourceNamespace: sched
`))
	if err != nil {
		t.Fatal(err)
	}
	flags := serveSettings{kubeconfig: "/home/me/.kube/config", qps: 50, burst: 100, leaderElect: true, election: kube.DefaultLeaderElection()}
	fromFile := serveSettings{kubeconfig: "/etc/kubernetes/scheduler.conf", qps: 80, burst: 160, contentType: config.ContentTypeProtobuf, leaderElect: false,
		election: kube.LeaderElection{LeaseName: "my-scheduler", LeaseNamespace: "sched", LeaseDuration: 30 * time.Second, RenewDeadline: 20 * time.Second, RetryPeriod: 4 * time.Second}}
	for _, tc := range []struct {
		name  string
		given []string
		want  serveSettings
	}{
		{"no flag given: the file's", nil, fromFile},
		{"every flag given: the flags'", []string{flagKubeconfig, flagQPS, flagBurst, flagLeaderElect, flagLeaseName, flagLeaseNamespace, flagLeaseDuration, flagRenewDeadline, flagRetryPeriod},
			serveSettings{kubeconfig: "/home/me/.kube/config", qps: 50, burst: 100, contentType: config.ContentTypeProtobuf, leaderElect: true, election: kube.DefaultLeaderElection()}},
		{"--kubeconfig given: the file's kubeconfig is not used", []string{flagKubeconfig}, func() serveSettings {
			s := fromFile
			s.kubeconfig = "/home/me/.kube/config"
			return s
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			given := func(flag string) bool {
				for _, g := range tc.given {
					if g == flag {
						return true
					}
				}
				return false
			}
			if got := flags.withConfig(cfg, given); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
	// A file without the sections changes nothing; partial sections only
	// what they say.
	if got := flags.withConfig(config.Default(), func(string) bool { return false }); !reflect.DeepEqual(got, flags) {
		t.Errorf("the default configuration changed the flags: %+v", got)
	}
	partial, err := config.Parse([]byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nleaderElection: {retryPeriod: 1s}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := flags
	want.election.RetryPeriod = time.Second
	if got := flags.withConfig(partial, func(string) bool { return false }); !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

// TestServeSettingsNameRealFlags: the flags the configuration stands in
// for are serve's.
func TestServeSettingsNameRealFlags(t *testing.T) {
	cmd := newServeCommand(func() hclog.Logger { return hclog.NewNullLogger() })
	for _, name := range []string{flagKubeconfig, flagQPS, flagBurst, flagLeaderElect, flagLeaseName, flagLeaseNamespace, flagLeaseDuration, flagRenewDeadline, flagRetryPeriod} {
		if cmd.Flags().Lookup(name) == nil {
			t.Errorf("serve has no flag --%s", name)
		}
	}
}

// TestServeSettingsContentTypesApplyToTheClientset: the clientset's
// configuration carries the content types; the one the dynamic and
// metrics clients use keeps client-go's default.
func TestServeSettingsContentTypesApplyToTheClientset(t *testing.T) {
	rc := &rest.Config{Host: "https://127.0.0.1:6443"}
	s := serveSettings{contentType: config.ContentTypeProtobuf, accept: "application/vnd.kubernetes.protobuf,application/json"}
	got := s.clientsetConfig(rc)
	if got.ContentType != config.ContentTypeProtobuf || got.AcceptContentTypes != s.accept || got.Host != rc.Host {
		t.Errorf("clientset config %+v", got)
	}
	if rc.ContentType != "" || rc.AcceptContentTypes != "" {
		t.Errorf("the shared config was changed: %+v", rc)
	}
}

// TestServeUsesTheConfigurationsKubeconfig: serve reads the kubeconfig a
// kube-scheduler file names when --kubeconfig is not given (a missing
// file's error names it) and ignores it when --kubeconfig is given.
func TestServeUsesTheConfigurationsKubeconfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "scheduler.yaml")
	missing := filepath.Join(dir, "no-such-kubeconfig")
	if err := os.WriteFile(path, []byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nclientConnection: {kubeconfig: no-such-kubeconfig}\nleaderElection: {leaderElect: false}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--config", path}, missing},
		{[]string{"--config", path, "--kubeconfig", filepath.Join(dir, "from-flag")}, filepath.Join(dir, "from-flag")},
	} {
		cmd := newServeCommand(func() hclog.Logger { return hclog.NewNullLogger() })
		cmd.SetArgs(tc.args)
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want it to name %s", tc.args, err, tc.want)
		}
	}
}
