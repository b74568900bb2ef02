// Package manifestcheck decodes every Kubernetes manifest in deploy/k8s with client-go's scheme, strictly
// (an unknown or misspelt field fails), and checks what the agents need of them. It is its own module so
// that client-go stays out of the lab binary's dependencies: cd deploy/k8s/manifestcheck && go test .
package manifestcheck

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

// objects decodes every document of every .yaml file in deploy/k8s.
func objects(t *testing.T) map[string][]runtime.Object {
	t.Helper()
	files, err := filepath.Glob("../*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in deploy/k8s: %v", err)
	}
	dec := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	out := map[string][]runtime.Object{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range bytes.Split(b, []byte("\n---")) {
			if len(bytes.TrimSpace(stripComments(doc))) == 0 {
				continue
			}
			j, err := yaml.YAMLToJSON(doc)
			if err != nil {
				t.Fatalf("%s document %d: %v", f, i, err)
			}
			obj, gvk, err := dec.Decode(j, nil, nil)
			if err != nil {
				t.Fatalf("%s document %d: %v", f, i, err)
			}
			t.Logf("%s: %s %s", filepath.Base(f), gvk.Kind, name(obj))
			out[gvk.Kind] = append(out[gvk.Kind], obj)
		}
	}
	return out
}

func stripComments(b []byte) []byte {
	var keep [][]byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(l), []byte("#")) {
			keep = append(keep, l)
		}
	}
	return bytes.Join(keep, []byte("\n"))
}

func name(o runtime.Object) string {
	if m, ok := o.(interface{ GetName() string }); ok {
		return m.GetName()
	}
	return "?"
}

func TestManifestsDecode(t *testing.T) {
	objs := objects(t)
	for _, kind := range []string{"Namespace", "Service", "StatefulSet", "Secret", "ConfigMap", "Job"} {
		if len(objs[kind]) == 0 {
			t.Errorf("no %s among the manifests", kind)
		}
	}
}

// The agents are privileged pods, one per node, behind a headless Service; what the pods mount exists.
func TestAgentsAndCoordinator(t *testing.T) {
	objs := objects(t)
	secrets, configs := map[string]bool{}, map[string]*corev1.ConfigMap{}
	for _, o := range objs["Secret"] {
		secrets[o.(*corev1.Secret).Name] = true
	}
	for _, o := range objs["ConfigMap"] {
		c := o.(*corev1.ConfigMap)
		configs[c.Name] = c
	}
	var headless string
	for _, o := range objs["Service"] {
		if s := o.(*corev1.Service); s.Spec.ClusterIP == corev1.ClusterIPNone {
			headless = s.Name
		}
	}
	if headless == "" {
		t.Fatal("no headless Service for the agents")
	}
	// checkPod checks a pod of the agents' deployment (the agents, the coordinator). Other manifests
	// (the sweeps' Indexed Job, whose ConfigMap is made from files with kubectl) are only decoded.
	checkPod := func(what string, p corev1.PodSpec, privileged bool) {
		for _, c := range p.Containers {
			if !strings.HasPrefix(c.Image, "fabriclab/lab:") || c.ImagePullPolicy != corev1.PullNever {
				t.Errorf("%s: image %s (policy %s): want the locally built fabriclab/lab image, never pulled", what, c.Image, c.ImagePullPolicy)
			}
			if privileged && (c.SecurityContext == nil || c.SecurityContext.Privileged == nil || !*c.SecurityContext.Privileged) {
				t.Errorf("%s: container %s is not privileged (the agent makes namespaces)", what, c.Name)
			}
		}
		for _, v := range p.Volumes {
			if v.Secret != nil && !secrets[v.Secret.SecretName] {
				t.Errorf("%s: mounts Secret %s, which no manifest defines", what, v.Secret.SecretName)
			}
			if v.Secret != nil && (v.Secret.DefaultMode == nil || *v.Secret.DefaultMode&0o077 != 0) {
				t.Errorf("%s: Secret %s is mounted readable by others (the agent refuses it): set defaultMode 0400", what, v.Secret.SecretName)
			}
			if v.ConfigMap != nil && configs[v.ConfigMap.Name] == nil {
				t.Errorf("%s: mounts ConfigMap %s, which no manifest defines", what, v.ConfigMap.Name)
			}
		}
	}
	agents := 0
	for _, o := range objs["StatefulSet"] {
		s := o.(*appsv1.StatefulSet)
		if s.Spec.ServiceName != headless {
			continue
		}
		agents++
		aff := s.Spec.Template.Spec.Affinity
		if aff == nil || aff.PodAntiAffinity == nil || len(aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) == 0 ||
			aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].TopologyKey != "kubernetes.io/hostname" {
			t.Errorf("StatefulSet %s: no required anti-affinity on kubernetes.io/hostname (one agent per node)", s.Name)
		}
		checkPod("StatefulSet "+s.Name, s.Spec.Template.Spec, true)
		// The cluster file names every replica by its stable DNS name.
		cf := configs["fabriclab-config"]
		for i := 0; i < int(*s.Spec.Replicas); i++ {
			want := s.Name + "-" + string(rune('0'+i)) + "." + headless + "."
			if cf == nil || !strings.Contains(cf.Data["cluster.yaml"], want) {
				t.Errorf("the cluster file does not name replica %d as %s...", i, want)
			}
		}
	}
	if agents == 0 {
		t.Error("no StatefulSet of agents behind the headless Service")
	}
	coordinators := 0
	for _, o := range objs["Job"] {
		if j := o.(*batchv1.Job); j.Name == "fabriclab-run" {
			coordinators++
			checkPod("Job "+j.Name, j.Spec.Template.Spec, false)
		}
	}
	if coordinators != 1 {
		t.Errorf("%d coordinator Jobs (fabriclab-run), want 1", coordinators)
	}
}
