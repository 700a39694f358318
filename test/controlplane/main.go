// Command controlplane runs a real, single-process Kubernetes control plane on
// loopback for tests and the local sandbox: embedded etcd, kube-apiserver and
// the garbage-collector, namespace and service-account controllers of
// kube-controller-manager, all from the same Kubernetes release.
//
//	controlplane serve [--dir DIR] [--exit-on-stdin-close] [--node-address IP]
//	controlplane mint-user --dir DIR --user NAME [--group G]... --out FILE
//
// serve prints one JSON line on stdout once the API server is ready:
//
//	{"kubeconfig": "...", "server": "https://127.0.0.1:PORT", "version": "v1.36.3", "dir": "..."}
//
// Everything else (component logs) goes to stderr. serve --dir on a directory
// that holds a previous run restarts that control plane with its certificates,
// etcd data and port, so stored objects and existing kubeconfigs stay valid.
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serveCmd(os.Args[2:])
	case "mint-user":
		err = mintUserCmd(os.Args[2:])
	case "-h", "--help", "help":
		usage()
	default:
		fmt.Fprintf(os.Stderr, "controlplane: unknown command %q\n", os.Args[1])
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "controlplane: %v\n", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, `usage:
  controlplane serve [--dir DIR] [--exit-on-stdin-close] [--node-address IP]
  controlplane mint-user --dir DIR --user NAME [--group GROUP]... --out KUBECONFIG`)
	os.Exit(2)
}

func serveCmd(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	dir := fs.String("dir", "", "state directory (certificates, etcd data, kubeconfig), kept on exit; a temporary one, removed on exit, when empty. A directory that holds a previous run restarts it: same certificates, etcd data and port")
	stdinClose := fs.Bool("exit-on-stdin-close", false, "shut down when stdin closes, so a parent that dies cannot leave us running")
	nodeAddress := fs.String("node-address", "", "serve a real node (scripts/node/): listen on and advertise this address (the pod bridge's), authorize kubelets (Node,RBAC), and run the controllers a Deployment needs; loopback only when empty")
	_ = fs.Parse(args)
	var node net.IP
	if *nodeAddress != "" {
		if node = net.ParseIP(*nodeAddress); node == nil {
			return fmt.Errorf("--node-address: %q is not an IP address", *nodeAddress)
		}
	}
	return serve(*dir, *stdinClose, node)
}

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func mintUserCmd(args []string) error {
	fs := flag.NewFlagSet("mint-user", flag.ExitOnError)
	dir := fs.String("dir", "", "state directory of a running control plane")
	user := fs.String("user", "", "user name (certificate common name)")
	out := fs.String("out", "", "kubeconfig file to write")
	var groups stringList
	fs.Var(&groups, "group", "group (certificate organization); repeatable")
	_ = fs.Parse(args)
	if *dir == "" || *user == "" || *out == "" {
		return fmt.Errorf("mint-user needs --dir, --user and --out")
	}
	return mintUser(*dir, *user, groups, *out)
}
