package main

// Certificates for the local control plane: one CA signs the API server's
// serving certificate and every client certificate, so a test can mint a
// user's credentials at any time (mint-user) without restarting the server.

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

const (
	caCertFile      = "ca.crt"
	caKeyFile       = "ca.key"
	servingCertFile = "apiserver.crt"
	servingKeyFile  = "apiserver.key"
	saKeyFile       = "sa.key"
	saPubFile       = "sa.pub"
	serverFile      = "server" // the API server URL, for mint-user
	// The API server's client certificate towards kubelets (node mode).
	kubeletClientCertFile = "apiserver-kubelet-client.crt"
	kubeletClientKeyFile  = "apiserver-kubelet-client.key"
	// Services' virtual IPs; the first one is the kubernetes Service's.
	serviceCIDR         = "10.96.0.0/16"
	kubernetesServiceIP = "10.96.0.1"
)

type authority struct {
	cert *x509.Certificate
	key  crypto.Signer
}

func newSerial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		panic(err)
	}
	return n
}

func writePEM(path, kind string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600)
}

func writeKey(path string, key crypto.Signer) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, "PRIVATE KEY", der)
}

// createPKI writes the CA, the serving certificate and the service-account
// signing key pair into dir; with a node address also the API server's
// client certificate for kubelets, and the serving certificate names that
// address and the kubernetes Service, which is how pods reach the server.
func createPKI(dir string, nodeAddress net.IP) error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          newSerial(),
		Subject:               pkix.Name{CommonName: "neon-cloud-operator-test-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, caKey.Public(), caKey)
	if err != nil {
		return err
	}
	if err := writePEM(filepath.Join(dir, caCertFile), "CERTIFICATE", der); err != nil {
		return err
	}
	if err := writeKey(filepath.Join(dir, caKeyFile), caKey); err != nil {
		return err
	}
	caCert, _ := x509.ParseCertificate(der)
	ca := &authority{cert: caCert, key: caKey}

	servingDER, servingKey, err := ca.issue(pkix.Name{CommonName: "kube-apiserver"}, x509.ExtKeyUsageServerAuth, nodeAddress)
	if err != nil {
		return err
	}
	if err := writePEM(filepath.Join(dir, servingCertFile), "CERTIFICATE", servingDER); err != nil {
		return err
	}
	if err := writeKey(filepath.Join(dir, servingKeyFile), servingKey); err != nil {
		return err
	}
	if nodeAddress != nil {
		// system:masters: the kubelet authorizes the API server's proxied
		// requests (logs, exec, stats) by asking the API server itself.
		der, key, err := ca.issue(pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}}, x509.ExtKeyUsageClientAuth, nil)
		if err != nil {
			return err
		}
		if err := writePEM(filepath.Join(dir, kubeletClientCertFile), "CERTIFICATE", der); err != nil {
			return err
		}
		if err := writeKey(filepath.Join(dir, kubeletClientKeyFile), key); err != nil {
			return err
		}
	}

	// Service-account tokens are signed with RSA, which every JWT consumer accepts.
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	if err := writeKey(filepath.Join(dir, saKeyFile), saKey); err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(saKey.Public())
	if err != nil {
		return err
	}
	return writePEM(filepath.Join(dir, saPubFile), "PUBLIC KEY", pub)
}

func loadAuthority(dir string) (*authority, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, caCertFile))
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, caKeyFile))
	if err != nil {
		return nil, err
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, fmt.Errorf("bad CA files in %s", dir)
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, err
	}
	key, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, err
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("CA key is not a signer")
	}
	return &authority{cert: cert, key: signer}, nil
}

// issue signs a fresh key pair. Server certificates are valid for the loopback
// names, and for a node address and the kubernetes Service's names when the
// control plane serves a node.
func (a *authority) issue(subject pkix.Name, usage x509.ExtKeyUsage, nodeAddress net.IP) ([]byte, crypto.Signer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: newSerial(),
		Subject:      subject,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
	if usage == x509.ExtKeyUsageServerAuth {
		tmpl.DNSNames = []string{"localhost"}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		if nodeAddress != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, nodeAddress, net.ParseIP(kubernetesServiceIP))
			tmpl.DNSNames = append(tmpl.DNSNames, "kubernetes", "kubernetes.default",
				"kubernetes.default.svc", "kubernetes.default.svc.cluster.local")
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, key.Public(), a.key)
	return der, key, err
}

// writeUserKubeconfig writes a kubeconfig that authenticates as user (in the
// given groups) with a client certificate signed by the control plane's CA.
func writeUserKubeconfig(dir, server, user string, groups []string, out string) error {
	ca, err := loadAuthority(dir)
	if err != nil {
		return err
	}
	der, key, err := ca.issue(pkix.Name{CommonName: user, Organization: groups}, x509.ExtKeyUsageClientAuth, nil)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, caCertFile))
	if err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{
		ClientCertificateData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		ClientKeyData:         pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: user, Namespace: "default"}
	cfg.CurrentContext = "local"
	return clientcmd.WriteToFile(*cfg, out)
}

func mintUser(dir, user string, groups []string, out string) error {
	server, err := os.ReadFile(filepath.Join(dir, serverFile))
	if err != nil {
		return fmt.Errorf("no running control plane in %s: %w", dir, err)
	}
	return writeUserKubeconfig(dir, string(server), user, groups, out)
}
