// Package manifestcheck decodes exactly what the documented command (`kubectl apply -k deploy/k8s/`)
// applies, the resources deploy/k8s/kustomization.yaml lists, with client-go's scheme, strictly (an
// unknown or misspelt field fails), and checks what the agents and the coordinator need of them; the
// sweep Job (deploy/k8s/sweep/) is decoded on its own. It is its own module so that client-go stays out
// of the lab binary's dependencies: cd deploy/k8s/manifestcheck && go test .
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

// documented are the Secrets the walkthrough creates with kubectl (never a manifest: a value in the
// repository would be applied over the user's).
var documented = map[string]bool{"fabriclab": true}

// applied is the list of files kustomization.yaml applies, in its order; every other .yaml directly in
// deploy/k8s is an error (the documented command would leave it out).
func applied(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Resources  []string `json:"resources"`
	}
	if err := yaml.UnmarshalStrict(b, &k); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	if k.Kind != "Kustomization" || len(k.Resources) == 0 {
		t.Fatalf("kustomization.yaml: kind %q, %d resources", k.Kind, len(k.Resources))
	}
	listed := map[string]bool{}
	var files []string
	for _, r := range k.Resources {
		listed[r] = true
		files = append(files, filepath.Join("..", r))
	}
	all, _ := filepath.Glob("../*.yaml")
	for _, f := range all {
		if b := filepath.Base(f); b != "kustomization.yaml" && !listed[b] {
			t.Errorf("deploy/k8s/%s is not in kustomization.yaml: the documented kubectl apply -k would leave it out (move it to a directory of its own)", b)
		}
	}
	return files
}

type object struct {
	file string
	obj  runtime.Object
}

// decode decodes every document of files, in order.
func decode(t *testing.T, files []string) []object {
	t.Helper()
	dec := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	var out []object
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
			out = append(out, object{filepath.Base(f), obj})
		}
	}
	return out
}

// objects are what the documented command applies, by kind.
func objects(t *testing.T) map[string][]runtime.Object {
	t.Helper()
	out := map[string][]runtime.Object{}
	for _, o := range decode(t, applied(t)) {
		k := o.obj.GetObjectKind().GroupVersionKind().Kind
		out[k] = append(out[k], o.obj)
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
	for _, kind := range []string{"Namespace", "Service", "StatefulSet", "ConfigMap", "Job", "PersistentVolumeClaim"} {
		if len(objs[kind]) == 0 {
			t.Errorf("no %s among what kubectl apply -k deploy/k8s/ applies", kind)
		}
	}
	sweep, _ := filepath.Glob("../sweep/*.yaml")
	if len(sweep) == 0 {
		t.Error("no sweep Job under deploy/k8s/sweep")
	}
	decode(t, sweep)
}

// What the documented command applies: the namespace first, everything else in it, no Secret, no sweep.
func TestAppliedSet(t *testing.T) {
	objs := decode(t, applied(t))
	if len(objs) == 0 {
		t.Fatal("nothing applied")
	}
	ns, ok := objs[0].obj.(*corev1.Namespace)
	if !ok {
		t.Fatalf("the first object applied is a %T from %s, not the Namespace (kubectl apply -f applies in name order; -k puts Namespaces first, and so does the list)", objs[0].obj, objs[0].file)
	}
	for _, o := range objs[1:] {
		m, ok := o.obj.(interface{ GetNamespace() string })
		if !ok || m.GetNamespace() != ns.Name {
			t.Errorf("%s: %s %s is not in namespace %s", o.file, o.obj.GetObjectKind().GroupVersionKind().Kind, name(o.obj), ns.Name)
		}
		switch x := o.obj.(type) {
		case *corev1.Secret:
			t.Errorf("%s: Secret %s is applied: a value shipped in the repository overwrites the user's (the walkthrough creates it)", o.file, x.Name)
		case *batchv1.Job:
			if x.Spec.CompletionMode != nil && *x.Spec.CompletionMode == batchv1.IndexedCompletion {
				t.Errorf("%s: the Indexed sweep Job %s is applied with the lab (it belongs in deploy/k8s/sweep)", o.file, x.Name)
			}
		}
	}
}

// The agents are privileged pods, one per node, behind a headless Service; what the pods mount exists.
func TestAgentsAndCoordinator(t *testing.T) {
	objs := objects(t)
	secrets, configs, claims := map[string]bool{}, map[string]*corev1.ConfigMap{}, map[string]bool{}
	for n := range documented {
		secrets[n] = true
	}
	for _, o := range objs["PersistentVolumeClaim"] {
		claims[o.(*corev1.PersistentVolumeClaim).Name] = true
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
			if v.PersistentVolumeClaim != nil && !claims[v.PersistentVolumeClaim.ClaimName] {
				t.Errorf("%s: mounts PersistentVolumeClaim %s, which nothing applied defines", what, v.PersistentVolumeClaim.ClaimName)
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
			// Results outlive the pod: the run directory goes to a claim, not an emptyDir.
			out := ""
			for i, a := range j.Spec.Template.Spec.Containers[0].Args {
				if a == "-o" && i+1 < len(j.Spec.Template.Spec.Containers[0].Args) {
					out = j.Spec.Template.Spec.Containers[0].Args[i+1]
				}
			}
			onClaim := false
			for _, m := range j.Spec.Template.Spec.Containers[0].VolumeMounts {
				for _, v := range j.Spec.Template.Spec.Volumes {
					if v.Name == m.Name && v.PersistentVolumeClaim != nil && out != "" && strings.HasPrefix(out, m.MountPath+"/") {
						onClaim = true
					}
				}
			}
			if !onClaim {
				t.Errorf("Job %s: -o %q is not on a PersistentVolumeClaim: the results would go with the pod", j.Name, out)
			}
		}
	}
	if coordinators != 1 {
		t.Errorf("%d coordinator Jobs (fabriclab-run), want 1", coordinators)
	}
	// The coordinator may start before the agents: the cluster file bounds how long it waits for them.
	if cf := configs["fabriclab-config"]; cf == nil || !strings.Contains(cf.Data["cluster.yaml"], "wait_for_agents:") {
		t.Error("the cluster file sets no wait_for_agents: a coordinator started before its agents fails at once")
	}
}
