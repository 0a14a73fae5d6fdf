package v1alpha1

// AnnotationNodeTooLarge marks a Node that the server's member caches keep
// without its content: its labels, Kilo annotations, pod CIDRs and
// addresses together weigh more than the caches keep of one Node (a member
// API server is not bound by kube-apiserver's limits). The caches put it, in
// place of everything else, on the Node they hold; its value says how large
// the Node was. The planner skips such a Node with the reason NodeTooLarge.
// It is a contract between the caches and the planner, never stored or
// served: the caches keep no other annotation of this group.
const AnnotationNodeTooLarge = "mesh.kilo.squat.ai/node-too-large"
