#include "nn/restricted_unpickler.hpp"

#include <fmt/format.h>

#include <cstring>
#include <stdexcept>
#include <unordered_map>

namespace xg::nn::pickle {

namespace {

using Kind = Object::Kind;

Object of(Kind kind) {
  Object o;
  o.kind = kind;
  return o;
}

// Storage classes by their pickled global name, and what their elements are.
const std::pair<const char*, safetensors::DType> kStorages[] = {
    {"torch.FloatStorage", safetensors::DType::F32},   {"torch.HalfStorage", safetensors::DType::F16},
    {"torch.BFloat16Storage", safetensors::DType::BF16}, {"torch.LongStorage", safetensors::DType::I64},
    {"torch.IntStorage", safetensors::DType::I32}};
const char* const kRebuildTensor = "torch._utils._rebuild_tensor_v2";
const char* const kRebuildParameter = "torch._utils._rebuild_parameter";
const char* const kOrderedDict = "collections.OrderedDict";

bool is_storage_global(const std::string& name, safetensors::DType* dtype = nullptr) {
  for (const auto& [n, d] : kStorages)
    if (name == n) {
      if (dtype) *dtype = d;
      return true;
    }
  return false;
}

class Machine {
 public:
  Machine(const std::vector<uint8_t>& bytes, const std::string& file) : b_(bytes), file_(file) {}

  Unpickled run() {
    while (true) {
      if (pos_ >= b_.size()) fail("the pickle ends without a STOP opcode (truncated?)");
      op_pos_ = pos_;
      const uint8_t op = b_[pos_++];
      if (op == '.') break;  // STOP
      step(op);
    }
    if (stack_.size() != 1 || !marks_.empty())
      fail(fmt::format("STOP with {} objects and {} marks on the stack (expected one object)", stack_.size(), marks_.size()));
    return {std::move(objects_), stack_.back()};
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error(fmt::format("[torch_pickle] {}: {} (pickle byte {})", file_, what, op_pos_));
  }
  const uint8_t* take(uint64_t n) {
    if (n > b_.size() - pos_) fail(fmt::format("an argument of {} bytes runs past the end of the pickle (truncated?)", n));
    const uint8_t* p = b_.data() + pos_;
    pos_ += size_t(n);
    return p;
  }
  uint64_t le(int n) {
    const uint8_t* p = take(uint64_t(n));
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = v << 8 | p[i];
    return v;
  }
  std::string line() {  // GLOBAL's arguments: text up to a newline
    const size_t start = pos_;
    while (pos_ < b_.size() && b_[pos_] != '\n') ++pos_;
    if (pos_ >= b_.size()) fail("GLOBAL's name runs past the end of the pickle");
    return std::string(reinterpret_cast<const char*>(b_.data()) + start, pos_++ - start);
  }

  size_t make(Object o) {
    if (objects_.size() >= kMaxObjects) fail(fmt::format("more than {} objects", kMaxObjects));
    objects_.push_back(std::move(o));
    return objects_.size() - 1;
  }
  void push_new(Object o) { stack_.push_back(make(std::move(o))); }
  size_t pop() {
    if (stack_.empty() || (!marks_.empty() && stack_.size() == marks_.back())) fail("pop from an empty stack");
    const size_t v = stack_.back();
    stack_.pop_back();
    return v;
  }
  size_t top() {
    if (stack_.empty() || (!marks_.empty() && stack_.size() == marks_.back())) fail("no object on the stack");
    return stack_.back();
  }
  std::vector<size_t> pop_to_mark() {
    if (marks_.empty()) fail("no MARK to pop to");
    std::vector<size_t> items(stack_.begin() + long(marks_.back()), stack_.end());
    stack_.resize(marks_.back());
    marks_.pop_back();
    return items;
  }
  Object& at(size_t index, Kind kind, const char* what) {
    Object& o = objects_[index];
    if (o.kind != kind) fail(fmt::format("{} is not of the expected kind", what));
    return o;
  }
  void push_tuple(std::vector<size_t> items) {
    Object t = of(Kind::Tuple);
    t.items = std::move(items);
    push_new(std::move(t));
  }
  void push_int(int64_t v) {
    Object o = of(Kind::Int);
    o.i = v;
    push_new(std::move(o));
  }
  void push_string(uint64_t n) {
    Object o = of(Kind::String);
    const uint8_t* p = take(n);
    o.s.assign(reinterpret_cast<const char*>(p), size_t(n));
    push_new(std::move(o));
  }
  void push_global(const std::string& module, const std::string& name) {
    const std::string full = module + "." + name;
    if (full != kRebuildTensor && full != kRebuildParameter && full != kOrderedDict && !is_storage_global(full))
      fail(fmt::format("global '{}' is not allowed: only {}, {}, {} and torch.<Float|Half|BFloat16|Long|Int>Storage are "
                       "(nothing in a checkpoint is executed)", full, kRebuildTensor, kRebuildParameter, kOrderedDict));
    Object g = of(Kind::Global);
    g.s = full;
    push_new(std::move(g));
  }
  void memo_put(uint64_t key) { memo_[key] = top(); }
  void memo_get(uint64_t key) {
    const auto it = memo_.find(key);
    if (it == memo_.end()) fail(fmt::format("memo key {} was never stored", key));
    stack_.push_back(it->second);
  }
  void add_to_list(size_t list, const std::vector<size_t>& items) {
    Object& l = at(list, Kind::List, "APPEND's target");
    l.items.insert(l.items.end(), items.begin(), items.end());
  }
  void add_to_dict(size_t dict, const std::vector<size_t>& kv) {
    if (kv.size() % 2) fail("SETITEMS with an odd number of keys and values");
    Object& d = at(dict, Kind::Dict, "SETITEM's target");
    d.items.insert(d.items.end(), kv.begin(), kv.end());
  }

  // BINPERSID: ('storage', torch.<T>Storage, key, location, element count) names archive/data/<key>.
  void persistent_load() {
    const Object& id = at(pop(), Kind::Tuple, "a persistent id");
    if (id.items.size() != 5 || objects_[id.items[0]].kind != Kind::String || objects_[id.items[0]].s != "storage")
      fail("a persistent id is not ('storage', type, key, location, size)");
    Object s = of(Kind::Storage);
    const Object& type = at(id.items[1], Kind::Global, "a storage type");
    if (!is_storage_global(type.s, &s.dtype)) fail(fmt::format("'{}' is not a storage type", type.s));
    s.s = at(id.items[2], Kind::String, "a storage key").s;
    s.i = at(id.items[4], Kind::Int, "a storage size").i;
    if (s.i < 0) fail(fmt::format("storage '{}' has {} elements", s.s, s.i));
    push_new(std::move(s));
  }
  std::vector<int64_t> int_tuple(size_t index, const char* what) {
    std::vector<int64_t> out;
    for (size_t e : at(index, Kind::Tuple, what).items) {
      if (objects_[e].kind != Kind::Int || objects_[e].i < 0) fail(fmt::format("{} holds something else than sizes", what));
      out.push_back(objects_[e].i);
    }
    return out;
  }
  void reduce() {
    const size_t args_index = pop();
    const std::string callable = at(pop(), Kind::Global, "REDUCE's callable").s;
    const std::vector<size_t> args = at(args_index, Kind::Tuple, "REDUCE's arguments").items;
    if (callable == kOrderedDict) {
      if (!args.empty()) fail("collections.OrderedDict called with arguments");
      push_new(of(Kind::Dict));
    } else if (callable == kRebuildTensor) {  // (storage, offset, size, stride, requires_grad, hooks[, metadata])
      if (args.size() < 4) fail(fmt::format("{} called with {} arguments", kRebuildTensor, args.size()));
      Object t = of(Kind::Tensor);
      at(args[0], Kind::Storage, "a tensor's storage");
      t.items = {args[0]};
      t.i = at(args[1], Kind::Int, "a tensor's storage offset").i;
      if (t.i < 0) fail(fmt::format("storage offset {}", t.i));
      t.sizes = int_tuple(args[2], "a tensor's size");
      t.strides = int_tuple(args[3], "a tensor's stride");
      if (t.sizes.size() != t.strides.size())
        fail(fmt::format("a tensor has {} sizes and {} strides", t.sizes.size(), t.strides.size()));
      push_new(std::move(t));
    } else if (callable == kRebuildParameter) {  // (tensor, requires_grad, hooks): the tensor itself
      if (args.empty()) fail(fmt::format("{} called without arguments", kRebuildParameter));
      at(args[0], Kind::Tensor, "a parameter's data");
      stack_.push_back(args[0]);
    } else {
      fail(fmt::format("'{}' cannot be called", callable));
    }
  }

  void step(uint8_t op) {
    switch (op) {
      case 0x80: {  // PROTO
        const uint64_t v = le(1);
        if (v < 2 || v > 5) fail(fmt::format("pickle protocol {} (torch.save writes 2 to 5)", v));
        break;
      }
      case 0x95: le(8); break;  // FRAME: a length hint only
      case '(': marks_.push_back(stack_.size()); break;
      case '1': pop_to_mark(); break;  // POP_MARK
      case '0': pop(); break;          // POP
      case '2': stack_.push_back(top()); break;  // DUP
      case ')': push_tuple({}); break;
      case 't': push_tuple(pop_to_mark()); break;
      case 0x85: push_tuple({pop()}); break;
      case 0x86: { const size_t b = pop(), a = pop(); push_tuple({a, b}); break; }
      case 0x87: { const size_t c = pop(), b = pop(), a = pop(); push_tuple({a, b, c}); break; }
      case ']': push_new(of(Kind::List)); break;
      case 'a': { const size_t v = pop(); add_to_list(top(), {v}); break; }
      case 'e': { auto items = pop_to_mark(); add_to_list(top(), items); break; }
      case '}': push_new(of(Kind::Dict)); break;
      case 's': { const size_t v = pop(), k = pop(); add_to_dict(top(), {k, v}); break; }
      case 'u': { auto kv = pop_to_mark(); add_to_dict(top(), kv); break; }
      case 'N': push_new(of(Kind::None)); break;
      case 0x88: case 0x89: { Object o = of(Kind::Bool); o.i = op == 0x88; push_new(std::move(o)); break; }
      case 'J': push_int(int32_t(uint32_t(le(4)))); break;
      case 'K': push_int(int64_t(le(1))); break;
      case 'M': push_int(int64_t(le(2))); break;
      case 0x8a: {  // LONG1: little-endian two's complement of n bytes
        const uint64_t n = le(1);
        if (n > 8) fail(fmt::format("an integer of {} bytes", n));
        uint64_t v = n ? le(int(n)) : 0;
        if (n > 0 && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t(0) << (8 * n);  // sign-extend
        push_int(int64_t(v));
        break;
      }
      case 'G': {  // BINFLOAT: big-endian double
        const uint8_t* p = take(8);
        uint64_t bits = 0;
        for (int i = 0; i < 8; ++i) bits = bits << 8 | p[i];
        Object o = of(Kind::Float);
        std::memcpy(&o.f, &bits, 8);
        push_new(std::move(o));
        break;
      }
      case 'X': push_string(le(4)); break;
      case 0x8c: push_string(le(1)); break;
      case 0x8d: push_string(le(8)); break;
      case 'c': { const std::string module = line(); push_global(module, line()); break; }
      case 0x93: {  // STACK_GLOBAL
        const size_t name = pop(), module = pop();
        push_global(at(module, Kind::String, "STACK_GLOBAL's module").s, at(name, Kind::String, "STACK_GLOBAL's name").s);
        break;
      }
      case 'q': memo_put(le(1)); break;
      case 'r': memo_put(le(4)); break;
      case 0x94: memo_put(memo_.size()); break;  // MEMOIZE
      case 'h': memo_get(le(1)); break;
      case 'j': memo_get(le(4)); break;
      case 'Q': persistent_load(); break;
      case 'R': reduce(); break;
      case 'b': {  // BUILD: only an OrderedDict's state (its _metadata), which a reader does not need
        pop();
        at(top(), Kind::Dict, "BUILD's target");
        break;
      }
      default:
        fail(fmt::format("opcode 0x{:02x} ('{}') is not allowed in a checkpoint", op,
                         op >= 0x20 && op < 0x7f ? std::string(1, char(op)) : std::string("?")));
    }
  }

  const std::vector<uint8_t>& b_;
  const std::string& file_;
  size_t pos_ = 0, op_pos_ = 0;
  std::vector<Object> objects_;
  std::vector<size_t> stack_, marks_;
  std::unordered_map<uint64_t, size_t> memo_;
};

}  // namespace

Unpickled unpickle(const std::vector<uint8_t>& bytes, const std::string& file) { return Machine(bytes, file).run(); }

}  // namespace xg::nn::pickle
