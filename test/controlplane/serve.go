package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/component-base/version"
	apiserverapp "k8s.io/kubernetes/cmd/kube-apiserver/app"
	kcmapp "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	kcmoptions "k8s.io/kubernetes/cmd/kube-controller-manager/app/options"
)

const adminKubeconfig = "admin.kubeconfig"

// shutdownGrace is how long serve waits, after SIGTERM, for the API server's
// own graceful shutdown before it closes etcd and exits. Nothing here needs
// in-flight requests to finish: tests stop the control plane at the end.
const shutdownGrace = 2 * time.Second

// freePort asks the kernel for an unused loopback port. Another process could
// take it before we bind; serve is retried by its callers in that rare case.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// etcdPortsFile keeps etcd's ports, so a restart on the same --dir finds its
// member at the addresses its data records.
const etcdPortsFile = "etcd-ports"

// etcdPorts returns the ports of a previous run in dir, or fresh ones.
func etcdPorts(dir string) (client, peer int, err error) {
	if b, err := os.ReadFile(filepath.Join(dir, etcdPortsFile)); err == nil {
		if _, err := fmt.Sscanf(string(b), "%d %d", &client, &peer); err == nil {
			return client, peer, nil
		}
	}
	if client, err = freePort(); err != nil {
		return 0, 0, err
	}
	if peer, err = freePort(); err != nil {
		return 0, 0, err
	}
	return client, peer, os.WriteFile(filepath.Join(dir, etcdPortsFile), fmt.Appendf(nil, "%d %d", client, peer), 0o600)
}

// apiserverPort returns the port of a previous run in dir (from its server
// file), so clients of a restarted API server keep their kubeconfig; or a fresh one.
func apiserverPort(dir string) (int, error) {
	if b, err := os.ReadFile(filepath.Join(dir, serverFile)); err == nil {
		if u, err := url.Parse(string(b)); err == nil {
			var port int
			if _, err := fmt.Sscanf(u.Port(), "%d", &port); err == nil && port > 0 {
				return port, nil
			}
		}
	}
	return freePort()
}

// hasPKI tells whether dir holds the certificates of a previous run.
func hasPKI(dir string) bool {
	for _, f := range []string{caCertFile, caKeyFile, servingCertFile, servingKeyFile, saKeyFile, saPubFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return false
		}
	}
	return true
}

func startEtcd(dir string) (*embed.Etcd, string, error) {
	clientPort, peerPort, err := etcdPorts(dir)
	if err != nil {
		return nil, "", err
	}
	cfg := embed.NewConfig()
	cfg.Name = "controlplane"
	cfg.Dir = filepath.Join(dir, "etcd")
	cfg.LogLevel = "error"
	clientURL := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", clientPort)}
	peerURL := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", peerPort)}
	cfg.ListenClientUrls = []url.URL{clientURL}
	cfg.AdvertiseClientUrls = []url.URL{clientURL}
	cfg.ListenPeerUrls = []url.URL{peerURL}
	cfg.AdvertisePeerUrls = []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	// Tests create and delete a lot; keep etcd's disk use small.
	cfg.AutoCompactionMode = "periodic"
	cfg.AutoCompactionRetention = "5m"
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, "", err
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, "", fmt.Errorf("etcd did not become ready within 60s")
	}
	return e, clientURL.String(), nil
}

func apiserverArgs(dir, etcdURL, address string, port int, node bool) []string {
	p := func(name string) string { return filepath.Join(dir, name) }
	args := []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=" + address,
		"--advertise-address=" + address,
		fmt.Sprintf("--secure-port=%d", port),
		"--tls-cert-file=" + p(servingCertFile),
		"--tls-private-key-file=" + p(servingKeyFile),
		"--client-ca-file=" + p(caCertFile),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + p(saPubFile),
		"--service-account-signing-key-file=" + p(saKeyFile),
		"--service-cluster-ip-range=" + serviceCIDR,
		"--profiling=false",
		"--v=0",
	}
	if !node {
		// No kubelet: nothing to authorize by node, and no pod could use the
		// kubernetes Service's endpoints.
		return append(args, "--authorization-mode=RBAC", "--endpoint-reconciler-type=none")
	}
	return append(args,
		// A kubelet may only read and write what its own pods need.
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction",
		// The kubernetes Service gets this server's address as its endpoint,
		// which is how pods reach it through kube-proxy.
		"--endpoint-reconciler-type=lease",
		// For logs, exec and the kubelet's stats, which the API server proxies.
		"--kubelet-client-certificate="+p(kubeletClientCertFile),
		"--kubelet-client-key="+p(kubeletClientKeyFile),
		"--kubelet-preferred-address-types=InternalIP",
	)
}

// The controllers every test needs: owner references and namespace deletion
// behave as in a cluster; the service-account controller gives every
// namespace its "default" account; the aggregated admin/edit/view roles get
// the rules of the roles labelled aggregate-to-* (deploy/cluster's).
const baseControllers = "garbage-collector-controller,namespace-controller,serviceaccount-controller," +
	"clusterrole-aggregation-controller"

// What a Deployment's pods need on a real node: ReplicaSets and their pods,
// Service endpoints, the kube-root-ca.crt ConfigMap that projected
// ServiceAccount volumes mount, and the node lifecycle controller, which lifts
// the not-ready taint a kubelet registers its node with.
const nodeControllers = ",deployment-controller,replicaset-controller,endpoints-controller,node-lifecycle-controller," +
	"endpointslice-controller,endpointslice-mirroring-controller,root-ca-certificate-publisher-controller," +
	"pod-garbage-collector-controller,disruption-controller"

func controllerManagerArgs(dir, kubeconfig string, node bool) []string {
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--controllers=" + baseControllers,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port=0",
		"--concurrent-gc-syncs=5",
	}
	if node {
		args[3] += nodeControllers
		args = append(args, "--root-ca-file="+filepath.Join(dir, caCertFile))
	}
	return args
}

// runControllerManager starts the controllers without kube-controller-manager's
// cobra command, which would configure process-wide logging a second time
// (the API server already did) and fail.
func runControllerManager(ctx context.Context, args []string) error {
	s, err := kcmoptions.NewKubeControllerManagerOptions()
	if err != nil {
		return err
	}
	known, disabled, aliases := kcmapp.KnownControllers(), kcmapp.ControllersDisabledByDefault(), kcmapp.ControllerAliases()
	named := s.Flags(known, disabled, aliases)
	s.ParsedFlags = &named
	fs := pflag.NewFlagSet("kube-controller-manager", pflag.ContinueOnError)
	for _, f := range named.FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	c, err := s.Config(ctx, known, disabled, aliases)
	if err != nil {
		return err
	}
	return kcmapp.Run(ctx, c.Complete())
}

// waitReady polls /readyz with the admin credentials until the server answers ok.
func waitReady(dir, server string, timeout time.Duration) error {
	caPEM, err := os.ReadFile(filepath.Join(dir, caCertFile))
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	client := &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		resp, err := client.Get(server + "/readyz")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			// 401/403 also prove the server is serving; /readyz is public by default.
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("API server not ready after %s", timeout)
}

func serve(dir string, exitOnStdinClose bool, nodeAddress net.IP) (err error) {
	node := nodeAddress != nil
	address := "127.0.0.1"
	if node {
		address = nodeAddress.String()
	}
	ownDir := dir == ""
	if ownDir {
		dir, err = os.MkdirTemp("", "neon-controlplane-")
		if err != nil {
			return err
		}
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	cleanup := func() {
		if ownDir {
			_ = os.RemoveAll(dir)
		}
	}
	defer cleanup()

	// A --dir that holds a previous run is a restart: same certificates, etcd
	// data and port, so the stored objects and existing kubeconfigs stay valid.
	if !hasPKI(dir) {
		if err := createPKI(dir, nodeAddress); err != nil {
			return fmt.Errorf("certificates: %w", err)
		}
	}
	etcd, etcdURL, err := startEtcd(dir)
	if err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	// Closed once: on an early return, or at shutdown below (a second Close panics).
	var closeEtcd sync.Once
	stopEtcd := func() { closeEtcd.Do(etcd.Close) }
	defer stopEtcd()

	port, err := apiserverPort(dir)
	if err != nil {
		return err
	}
	server := fmt.Sprintf("https://%s", net.JoinHostPort(address, fmt.Sprint(port)))
	if err := os.WriteFile(filepath.Join(dir, serverFile), []byte(server), 0o600); err != nil {
		return err
	}
	kubeconfig := filepath.Join(dir, adminKubeconfig)
	if err := writeUserKubeconfig(dir, server, "admin", []string{"system:masters"}, kubeconfig); err != nil {
		return err
	}

	// NewAPIServerCommand installs the process's SIGINT/SIGTERM handler and
	// starts a graceful shutdown on the first signal; but that shutdown waits
	// for the HTTP server to drain, which can take longer than any caller waits
	// (it was still running 40 s after SIGTERM). We watch the same signals to
	// stop the controllers, give the API server a short grace and then close
	// etcd ourselves.
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	apiCmd := apiserverapp.NewAPIServerCommand()
	apiCmd.SetArgs(apiserverArgs(dir, etcdURL, address, port, node))
	apiDone := make(chan error, 1)
	go func() { apiDone <- apiCmd.Execute() }()

	ready := make(chan error, 1)
	go func() { ready <- waitReady(dir, server, 120*time.Second) }()
	select {
	case err := <-apiDone:
		return fmt.Errorf("kube-apiserver exited: %v", err)
	case err := <-ready:
		if err != nil {
			return err
		}
	}

	kcmCtx, stopControllers := context.WithCancel(context.Background())
	defer stopControllers()
	go func() {
		if err := runControllerManager(kcmCtx, controllerManagerArgs(dir, kubeconfig, node)); err != nil && kcmCtx.Err() == nil {
			fmt.Fprintf(os.Stderr, "controlplane: kube-controller-manager exited: %v\n", err)
		}
	}()

	line, _ := json.Marshal(map[string]string{
		"kubeconfig": kubeconfig,
		"server":     server,
		"version":    version.Get().GitVersion,
		"dir":        dir,
	})
	fmt.Println(string(line))

	if exitOnStdinClose {
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			// The parent is gone: shut down as if it had sent SIGTERM.
			_ = syscall.Kill(os.Getpid(), syscall.SIGTERM)
		}()
	}

	select {
	case err = <-apiDone:
	case <-signals:
		// The controllers' watches are the API server's last clients.
		stopControllers()
		select {
		case err = <-apiDone:
		case <-time.After(shutdownGrace):
			fmt.Fprintf(os.Stderr, "controlplane: kube-apiserver still draining after %s; stopping etcd\n", shutdownGrace)
		}
	}
	// A second signal during shutdown would make the API server's handler
	// exit the process at once; take over signals so cleanup still runs.
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stopped := make(chan struct{})
	go func() { stopEtcd(); close(stopped) }()
	select {
	case <-stopped:
	case <-ctx.Done():
	}
	cleanup()
	if err != nil {
		return fmt.Errorf("kube-apiserver: %w", err)
	}
	return nil
}
