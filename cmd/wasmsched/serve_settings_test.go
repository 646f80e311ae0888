package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
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

// TestServeClientsetSpeaksProtobufByDefault: as kube-scheduler's, serve's
// clientset asks for and sends protobuf unless clientConnection says
// application/json; the headers are the ones a server sees.
func TestServeClientsetSpeaksProtobufByDefault(t *testing.T) {
	type seen struct{ accept, contentType string }
	var mu sync.Mutex
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, seen{r.Header.Get("Accept"), r.Header.Get("Content-Type")})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name               string
		s                  serveSettings
		accept, sendsPlain string
	}{
		{"default", serveSettings{}, config.ContentTypeProtobuf, config.ContentTypeProtobuf},
		{"clientConnection.contentType: application/json", serveSettings{contentType: config.ContentTypeJSON}, config.ContentTypeJSON, config.ContentTypeJSON},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			got = nil
			mu.Unlock()
			rc := &rest.Config{Host: srv.URL}
			client, err := kubernetes.NewForConfig(tc.s.clientsetConfig(rc))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			_, _ = client.CoreV1().Pods("ns").Get(ctx, "p", metav1.GetOptions{})
			_ = client.CoreV1().Pods("ns").Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}, metav1.CreateOptions{})
			mu.Lock()
			defer mu.Unlock()
			if len(got) != 2 {
				t.Fatalf("%d requests, want 2: %+v", len(got), got)
			}
			if !strings.HasPrefix(got[0].accept, tc.accept) || !strings.HasPrefix(got[1].accept, tc.accept) {
				t.Errorf("Accept %q and %q, want %s first", got[0].accept, got[1].accept, tc.accept)
			}
			if got[1].contentType != tc.sendsPlain {
				t.Errorf("a binding was sent as %q, want %s", got[1].contentType, tc.sendsPlain)
			}
			if rc.ContentType != "" {
				t.Errorf("the shared config (dynamic and metrics clients) was changed: %q", rc.ContentType)
			}
		})
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
