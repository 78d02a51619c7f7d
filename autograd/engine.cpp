#include "autograd/engine.h"

#include <unordered_map>

#include "autograd/autocast_mode.h"
#include "autograd/error.h"
#include "autograd/grad_mode.h"
#include "autograd/meta.h"
#include "tensor/creation.h"

namespace aclgrad::autograd {

namespace {

struct NodeTask {
  int64_t deps = 0;    // edges from not-yet-run nodes into this one
  tensor_list buffer;  // summed incoming gradients, one per forward output of the node
  bool exec = true;    // run apply() (false: the node leads to no requested gradient)
};

// Where grad() reads its results: result[k] = buffer[input_nr] of the node, when it is ready.
struct Capture {
  uint32_t input_nr;
  size_t result;
};

struct GraphTask {
  bool keep_graph = false;
  bool accumulate = true;  // backward(): run AccumulateGrad nodes; grad(): capture instead
  std::unordered_map<Node*, NodeTask> tasks;
  std::unordered_map<Node*, std::vector<Capture>> captures;
  tensor_list captured;
};

void add_to_buffer(NodeTask& task, uint32_t input_nr, Tensor g) {
  if (task.buffer.size() <= input_nr) task.buffer.resize(input_nr + 1);
  Tensor& slot = task.buffer[input_nr];
  slot = slot.defined() ? add_gradients(slot, g) : std::move(g);
}

// Each gradient a node returns must match the shape and dtype of the forward input it is for.
void validate_outputs(const Node& node, const tensor_list& grads) {
  check<AutogradError>(grads.size() == node.num_inputs(), node.name(), " returned ", grads.size(),
                       " gradients, expected ", node.num_inputs(), " (one per forward input)");
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i].defined() || !node.needs_grad(i)) continue;
    const TensorMeta& meta = node.input_meta(i);
    check<AutogradError>(grads[i].sizes() == meta.sizes, node.name(),
                         " returned an invalid gradient at index ", i, " — got ", grads[i].sizes(),
                         " expected ", meta.sizes);
    check<AutogradError>(grads[i].dtype() == meta.dtype, node.name(),
                         " returned an invalid gradient at index ", i, " — got ", grads[i].dtype(),
                         " expected ", meta.dtype);
  }
}

// Counts dependencies over every node reachable from the roots (iteratively).
void discover(GraphTask& gt, const std::vector<Edge>& roots) {
  std::vector<Node*> stack;
  for (const Edge& r : roots) {
    if (gt.tasks.try_emplace(r.node.get()).second) stack.push_back(r.node.get());
  }
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next_edges()) {
      if (!e.valid()) continue;
      auto [it, inserted] = gt.tasks.try_emplace(e.node.get());
      ++it->second.deps;
      if (inserted) stack.push_back(e.node.get());
    }
  }
}

// grad(): run only the nodes from which a captured edge can be reached (reverse topological
// sweep), and never the leaves' AccumulateGrad.
void prune(GraphTask& gt) {
  std::unordered_map<Node*, int64_t> remaining;
  std::vector<Node*> stack, order;
  for (auto& [n, task] : gt.tasks) {
    remaining[n] = task.deps;
    if (task.deps == 0) stack.push_back(n);
  }
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    order.push_back(n);
    for (const Edge& e : n->next_edges()) {
      if (e.valid() && --remaining[e.node.get()] == 0) stack.push_back(e.node.get());
    }
  }
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* n = *it;
    bool exec = false;
    for (const Edge& e : n->next_edges()) {
      if (!e.valid()) continue;
      exec = exec || gt.captures.count(e.node.get()) > 0 || gt.tasks[e.node.get()].exec;
    }
    gt.tasks[n].exec = exec && !n->is_accumulator();
  }
}

void run_node(GraphTask& gt, Node* n, NodeTask& task, bool create_graph,
              std::vector<Node*>& ready) {
  if (auto cap = gt.captures.find(n); cap != gt.captures.end()) {
    for (const Capture& c : cap->second) {
      if (c.input_nr < task.buffer.size() && task.buffer[c.input_nr].defined()) {
        gt.captured[c.result] = task.buffer[c.input_nr];
      }
    }
  }
  if (gt.accumulate) {
    for (const auto& [nr, weak] : n->retained_grads()) {
      std::shared_ptr<AutogradMeta> meta = weak.lock();
      if (meta && nr < task.buffer.size() && task.buffer[nr].defined()) {
        accumulate_into(static_cast<AutogradMetaImpl&>(*meta), task.buffer[nr]);
      }
    }
  }
  if (!task.exec) return;
  bool any_defined = false;
  for (const Tensor& g : task.buffer) any_defined = any_defined || g.defined();
  tensor_list grads;
  if (any_defined) {
    check<AutogradError>(!n->released(),
                         "Trying to backward through the graph a second time: ", n->name(),
                         " was already run by a backward without retain_graph=true, "
                         "which freed its saved tensors. Pass retain_graph=true to the first "
                         "backward or grad call to backward through the graph again");
    check<AutogradError>(!create_graph || n->supports_double_backward(), n->name(),
                         " does not support double backward: its gradient cannot be "
                         "differentiated again (create_graph=true reached it)");
    task.buffer.resize(n->num_outputs() > 0 ? n->num_outputs() : task.buffer.size());
    grads = n->apply(std::move(task.buffer));
    validate_outputs(*n, grads);
  } else {
    grads.resize(n->num_inputs());
  }
  task.buffer = tensor_list();
  if (!gt.keep_graph && !n->is_accumulator()) n->release_saved();
  const std::vector<Edge>& edges = n->next_edges();
  for (size_t i = 0; i < edges.size(); ++i) {
    if (!edges[i].valid()) continue;
    NodeTask& next = gt.tasks[edges[i].node.get()];
    if (grads[i].defined()) add_to_buffer(next, edges[i].input_nr, std::move(grads[i]));
    if (--next.deps == 0) ready.push_back(edges[i].node.get());
  }
}

// Runs the graph below `roots`, seeded with root_grads. With `capture_edges`, behaves as grad():
// returns the gradient arriving at each capture edge and leaves every .grad alone.
tensor_list run_graph(const std::vector<Edge>& roots, const tensor_list& root_grads,
                      bool keep_graph, bool create_graph, const std::vector<Edge>* capture_edges) {
  GraphTask gt;
  gt.keep_graph = keep_graph;
  gt.accumulate = capture_edges == nullptr;
  discover(gt, roots);
  if (capture_edges != nullptr) {
    gt.captured.resize(capture_edges->size());
    for (size_t k = 0; k < capture_edges->size(); ++k) {
      const Edge& e = (*capture_edges)[k];
      if (e.valid()) gt.captures[e.node.get()].push_back({e.input_nr, k});
    }
    prune(gt);
  }
  AutoGradMode mode(create_graph);
  // Backward ops run in the dtypes their forward recorded, never re-cast by an autocast scope
  // around the backward call (PyTorch's rule).
  autocast_detail::Suspend no_autocast;
  for (size_t i = 0; i < roots.size(); ++i) {
    add_to_buffer(gt.tasks[roots[i].node.get()], roots[i].input_nr, root_grads[i]);
  }
  std::vector<Node*> ready;
  for (auto& [n, task] : gt.tasks) {
    if (task.deps == 0) ready.push_back(n);
  }
  while (!ready.empty()) {
    Node* n = ready.back();
    ready.pop_back();
    run_node(gt, n, gt.tasks[n], create_graph, ready);
  }
  return std::move(gt.captured);
}

// Root edges and their seed gradients (ones for one-element outputs without a gradient).
void make_roots(const char* api, const tensor_list& outputs, const tensor_list& grad_outputs,
                std::vector<Edge>& roots, tensor_list& grads) {
  check<AutogradError>(!outputs.empty(), api, ": no output tensors given");
  check<AutogradError>(grad_outputs.empty() || grad_outputs.size() == outputs.size(), api, ": got ",
                       grad_outputs.size(), " gradients for ", outputs.size(), " outputs");
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& t = outputs[i];
    check<AutogradError>(t.defined(), api, ": output ", i, " is undefined");
    check<AutogradError>(t.requires_grad(), api, ": element ", i,
                         " of tensors does not require grad and does not have a grad_fn");
    Tensor g = grad_outputs.empty() ? Tensor() : grad_outputs[i];
    if (!g.defined()) {
      check<AutogradError>(t.numel() == 1, api,
                           ": grad can be implicitly created only for scalar outputs, output ", i,
                           " has shape ", t.sizes());
      g = ones(t.sizes(), t.dtype());
    }
    check<AutogradError>(g.sizes() == t.sizes() && g.dtype() == t.dtype(), api, ": gradient ", i,
                         " of shape ", g.sizes(), " and dtype ", g.dtype(),
                         " does not match output ", i, " of shape ", t.sizes(), " and dtype ",
                         t.dtype());
    roots.push_back(gradient_edge(t));
    grads.push_back(std::move(g));
  }
}

}  // namespace

void backward(const tensor_list& tensors, const tensor_list& grad_tensors,
              std::optional<bool> retain_graph, bool create_graph) {
  std::vector<Edge> roots;
  tensor_list grads;
  make_roots("backward", tensors, grad_tensors, roots, grads);
  run_graph(roots, grads, retain_graph.value_or(create_graph), create_graph, nullptr);
}

tensor_list grad(const tensor_list& outputs, const tensor_list& inputs,
                 const tensor_list& grad_outputs, std::optional<bool> retain_graph,
                 bool create_graph, bool allow_unused) {
  std::vector<Edge> roots;
  tensor_list grads;
  make_roots("grad", outputs, grad_outputs, roots, grads);
  std::vector<Edge> captures;
  for (size_t j = 0; j < inputs.size(); ++j) {
    check<AutogradError>(inputs[j].defined(), "grad: input ", j, " is undefined");
    check<AutogradError>(inputs[j].requires_grad(), "grad: input ", j,
                         " does not require grad (one of the differentiated tensors)");
    captures.push_back(gradient_edge(inputs[j]));
  }
  tensor_list result =
      run_graph(roots, grads, retain_graph.value_or(create_graph), create_graph, &captures);
  for (size_t j = 0; j < result.size(); ++j) {
    check<AutogradError>(allow_unused || result[j].defined(), "grad: input ", j, " of shape ",
                         inputs[j].sizes(),
                         " appears to not have been used in the graph; pass allow_unused=true "
                         "if this is the desired behavior");
  }
  return result;
}

}  // namespace aclgrad::autograd
