//! Random trace trees: a random loop with bridges attached to its guards, bridges out of
//! bridges, and bridges that jump back into the loop.
//!
//! ```text
//! root      a random loop (random_trace); its label gets a TargetToken; the guard that
//!           fails on the example inputs (and one more random guard) carry every label
//!           parameter among their fail arguments
//! bridge 1  out of the failing guard: random integer and float ops on the exit words,
//!           sometimes a guard of its own; when the loop counts (`jump(i + 1, n, ...)`),
//!           a fuel guard `i < LIMIT` and a jump back to the label with `i + 1` and
//!           `n = i + 1 + d`; otherwise `finish`
//! bridge 2  out of the fuel guard (a bridge out of a bridge): random ops, `finish`
//! bridge 3  out of another guard of the root, when there is one: random ops, `finish`
//! ```
//!
//! Every pass through bridge 1 raises the loop counter by at least one and the fuel guard
//! stops it below `LIMIT`, so a tree always leaves (native code has no iteration limit).
//! The other loop parameters get their exit words back (references always: the loop body
//! relies on their shape), or random values of their kind (integers and floats): the body's
//! guards may then fail, which every implementation must agree on.

use super::{random_trace, RandomConfig};
use crate::rng::Rng;
use crate::{run_tree, Outcome, RtValue, RunConfig};
use trace_ir::descr::Descr;
use trace_ir::entity::{GuardId, OpRef, Value};
use trace_ir::opcode::{Kind, Opcode};
use trace_ir::trace::{FailArg, Trace};
use trace_ir::tree::{exit_kinds, Bridge, TraceTree};
use trace_ir::{jump_target, FieldValue, GuardFacts, JumpTarget, TraceBuilder, WordFacts};

/// A random tree (see the module documentation) from a random loop of `cfg` (loops forced
/// on) and its example inputs. A deterministic function of `(cfg, seed)`; the tree passes
/// `trace_ir::verify_tree`.
pub fn random_tree(cfg: &RandomConfig, seed: u64) -> (TraceTree, Vec<RtValue>) {
    let cfg = RandomConfig {
        loops: true,
        ..cfg.clone()
    };
    let mut last = None;
    for attempt in 0..8u64 {
        let (root, inputs) = random_trace(&cfg, seed.wrapping_add(attempt.wrapping_mul(0x9e37_79b9)));
        if root.last_label().is_some() {
            return (grow_tree(root, &inputs, seed, &[]), inputs);
        }
        last = Some((root, inputs));
    }
    let (root, inputs) = last.expect("eight attempts");
    (grow_tree(root, &inputs, seed, &[]), inputs)
}

/// Attach random bridges to `root` (a verified trace, e.g. an optimized random loop) run
/// on `inputs`, as the module documentation describes: the guard that fails on `inputs`
/// gets bridge 1 (and through it bridge 2), another guard bridge 3. A root without a
/// failing guard or without a label gets the bridges it can. A bridge out of a guard of
/// the root starts with hints that state the guard's entry of `facts` (what the optimizer
/// of `root` knew at its exits, `optimizer::Optimized::guard_facts`; empty for a root that
/// was not optimized). When `root` is a peeled loop, bridges jump to its header label.
pub fn grow_tree(mut root: Trace, inputs: &[RtValue], seed: u64, facts: &[GuardFacts]) -> TraceTree {
    let mut rng = Rng::new(seed ^ 0x0b41_d6e5_7ee5);
    let mut token = 0x7000 + rng.below(0x1000);
    let label = root.last_label();
    if let Some(l) = label {
        match root.ops[l.index()].descr.map(|d| root.descr(d)) {
            // A peeled loop's body is entered through its header (the optimizer of a
            // bridge may go to the body when it proves what the body assumes).
            Some(Descr::Target(t)) => token = peeled_header(&root, *t).unwrap_or(*t),
            _ => {
                let d = root.make_descr(Descr::Target(token));
                root.ops[l.index()].descr = Some(d);
            }
        }
    }
    let failing = match run_tree(&TraceTree::new(root.clone()), inputs, &RunConfig::default()).outcome {
        Outcome::GuardFailed { guard, .. } => Some(guard),
        _ => None,
    };
    let others: Vec<GuardId> = root
        .guards
        .iter()
        .map(|g| g.id)
        .filter(|&g| Some(g) != failing)
        .collect();
    let other = (!others.is_empty()).then(|| *rng.pick(&others));
    // The label parameters among the fail arguments of both guards (when placed after it).
    let mut facts = facts.to_vec();
    if let Some(l) = label {
        for g in [failing, other].into_iter().flatten() {
            add_params_to_fail_args(&mut root, l, g, &mut facts);
        }
    }
    let facts_of = |g: GuardId| facts.iter().find(|f| f.guard == g);
    let mut next_id = root.max_guard_id().map_or(0, |g| g.0 + 1);
    let mut tree = TraceTree::new(root);
    if let Some(g) = failing {
        let counting = label.and_then(|l| counting_loop(&tree.root, l));
        let exit = exit_of(&tree.root, g);
        let (b1, fuel) = bridge_one(
            &mut rng,
            &tree.root,
            (g, facts_of(g)),
            exit,
            counting,
            token,
            &mut next_id,
        );
        tree.bridges.push(Bridge { guard: g, trace: b1 });
        if let Some(fuel) = fuel {
            let b2 = finishing_bridge(&mut rng, &tree.bridges[0].trace, (fuel, None), &mut next_id);
            tree.bridges.push(Bridge { guard: fuel, trace: b2 });
        }
    }
    if let Some(g) = other {
        let b3 = finishing_bridge(&mut rng, &tree.root, (g, facts_of(g)), &mut next_id);
        tree.bridges.push(Bridge { guard: g, trace: b3 });
    }
    tree
}

/// The number of parameters of the label of `t` with `TargetToken(token)`.
fn label_arity(t: &Trace, token: u64) -> Option<usize> {
    t.ops
        .iter()
        .find(|o| {
            o.opcode == Opcode::Label && matches!(o.descr.map(|d| t.descr(d)), Some(Descr::Target(x)) if *x == token)
        })
        .map(|o| o.args.len())
}

/// The header token of the peeled loop whose body label has `TargetToken(body)`, when `t`
/// has that header.
fn peeled_header(t: &Trace, body: u64) -> Option<u64> {
    t.ops
        .iter()
        .filter(|o| o.opcode == Opcode::Label)
        .find_map(|o| match o.descr.map(|d| t.descr(d)) {
            Some(Descr::Target(h)) if *h != body && trace_ir::peeled_body_token(*h) == body => Some(*h),
            _ => None,
        })
}

/// Give the guard `g` of `t` every parameter of the label `l` as a fail argument, when the
/// guard comes after the label; its entry of `facts` (exit words) follows: the new fail
/// arguments come after the old ones, before the fields of virtual objects, and nothing is
/// known of them.
fn add_params_to_fail_args(t: &mut Trace, l: OpRef, g: GuardId, facts: &mut [GuardFacts]) {
    let Some(at) = trace_ir::tree::guard_op(t, g) else {
        return;
    };
    if at.index() <= l.index() {
        return;
    }
    let params: Vec<Value> = t.label_params(l).map(Value::op).collect();
    let gr = t.ops[at.index()].guard.expect("a guard op");
    let gd = &mut t.guards[gr.index()];
    let values = gd.fail_args.iter().filter(|fa| matches!(fa, FailArg::Value(_))).count();
    let mut added = 0;
    for p in params {
        if !gd.fail_args.contains(&FailArg::Value(p)) {
            gd.fail_args.push(FailArg::Value(p));
            added += 1;
        }
    }
    if let Some(f) = facts.iter_mut().find(|f| f.guard == g) {
        if f.words.len() >= values {
            f.words
                .splice(values..values, std::iter::repeat_n(WordFacts::default(), added));
        }
        let shift = |k: &mut usize| {
            if *k >= values {
                *k += added;
            }
        };
        for field in &mut f.fields {
            shift(&mut field.object);
            if let FieldValue::Word(k) = &mut field.value {
                shift(k);
            }
        }
    }
}

/// When the loop at label `l` counts (its `jump` passes `int_add(p0, 1)` for its first
/// parameter and its second parameter unchanged, both integers): the two parameters.
fn counting_loop(t: &Trace, l: OpRef) -> Option<(Value, Value)> {
    let params: Vec<Value> = t.label_params(l).map(Value::op).collect();
    let last = OpRef::new(t.ops.len() - 1);
    let jump = t.op(last);
    if jump.opcode != Opcode::Jump || jump_target(t, last) != JumpTarget::Label(l) || params.len() < 2 {
        return None;
    }
    let (i, n) = (params[0], params[1]);
    if t.kind_of(i) != Kind::Int || t.kind_of(n) != Kind::Int || jump.args[1] != n {
        return None;
    }
    let step = t.op(jump.args[0].as_op()?);
    let adds_one = step.opcode == Opcode::IntAdd && step.args[0] == i && t.const_int(step.args[1]) == Some(1);
    adds_one.then_some((i, n))
}

/// What a bridge out of guard `g` of `t` starts with: the kinds of the exit words, and the
/// value of `t` behind each.
fn exit_of(t: &Trace, g: GuardId) -> Vec<(Kind, Value)> {
    let at = trace_ir::tree::guard_op(t, g).expect("a guard of the trace");
    let gd = t.guard_of(at).expect("resume data");
    let kinds = exit_kinds(t, gd);
    let mut vals = Vec::new();
    gd.for_each_value(|v| vals.push(v));
    kinds.into_iter().zip(vals).collect()
}

/// A bridge under construction: its builder and the values of each kind it has.
struct Gen<'r> {
    rng: &'r mut Rng,
    b: TraceBuilder,
    ints: Vec<Value>,
    floats: Vec<Value>,
    refs: Vec<Value>,
    inputs: Vec<Value>,
}

impl<'r> Gen<'r> {
    /// A bridge out of a guard of `parent` whose inputs have `kinds`, with hints stating
    /// `facts` about them.
    fn new(
        rng: &'r mut Rng,
        kinds: &[Kind],
        (parent, facts): (&Trace, Option<&GuardFacts>),
        first_guard: u32,
        aliasing: trace_ir::Aliasing,
    ) -> Gen<'r> {
        let mut b = TraceBuilder::new();
        b.guard_ids_from(first_guard).aliasing(aliasing);
        let mut g = Gen {
            rng,
            b,
            ints: Vec::new(),
            floats: Vec::new(),
            refs: Vec::new(),
            inputs: Vec::new(),
        };
        for &k in kinds {
            let v = g.b.input(k);
            g.inputs.push(v);
            g.add(k, v);
        }
        if let Some(f) = facts {
            f.record(parent, &g.inputs.clone(), &mut g.b);
        }
        g
    }

    fn add(&mut self, k: Kind, v: Value) {
        match k {
            Kind::Int => self.ints.push(v),
            Kind::Float => self.floats.push(v),
            Kind::Ref => self.refs.push(v),
            Kind::Void => {}
        }
    }

    fn int(&mut self) -> Value {
        if self.ints.is_empty() || self.rng.chance(1, 5) {
            let c = *self.rng.pick(&[0i64, 1, -1, 2, 3, 7, 64, i64::MAX, i64::MIN]);
            return self.b.const_int(c);
        }
        *self.rng.pick(&self.ints)
    }

    fn float(&mut self) -> Value {
        if self.floats.is_empty() || self.rng.chance(1, 4) {
            let c = *self.rng.pick(&[0.0, 1.5, -2.25, 1e300]);
            return self.b.const_float(c);
        }
        *self.rng.pick(&self.floats)
    }

    /// A few random integer and float ops, sometimes a guard that may fail.
    fn body(&mut self, first_key: u64) {
        const INT: [Opcode; 8] = [
            Opcode::IntAdd,
            Opcode::IntSub,
            Opcode::IntMul,
            Opcode::IntXor,
            Opcode::IntAnd,
            Opcode::IntOr,
            Opcode::IntLt,
            Opcode::UintLt,
        ];
        const FLOAT: [Opcode; 3] = [Opcode::FloatAdd, Opcode::FloatSub, Opcode::FloatMul];
        for k in 0..self.rng.below(7) {
            if !self.floats.is_empty() && self.rng.chance(1, 4) {
                let (x, y) = (self.float(), self.float());
                let v = self.b.op(*self.rng.pick(&FLOAT), &[x, y]);
                self.floats.push(v);
            } else {
                let (x, y) = (self.int(), self.int());
                let v = self.b.op(*self.rng.pick(&INT), &[x, y]);
                self.ints.push(v);
            }
            if self.rng.chance(1, 6) {
                let (x, y) = (self.int(), self.int());
                let c = self.b.op(Opcode::IntLe, &[x, y]);
                let fail = self.some_values();
                let opc = if self.rng.chance(1, 2) {
                    Opcode::GuardTrue
                } else {
                    Opcode::GuardFalse
                };
                self.b.guard(opc, &[c], &fail, first_key + k);
            }
        }
    }

    /// A random selection of the values so far.
    fn some_values(&mut self) -> Vec<Value> {
        let all: Vec<Value> = self
            .ints
            .iter()
            .chain(&self.floats)
            .chain(&self.refs)
            .copied()
            .collect();
        let n = self.rng.below(all.len() as u64 + 1);
        (0..n).map(|_| *self.rng.pick(&all)).collect()
    }
}

/// Bridge 1 out of guard `g` (exit words `exit`): see the module documentation. Returns
/// the bridge and its fuel guard, when it jumps back into the loop.
fn bridge_one(
    rng: &mut Rng,
    root: &Trace,
    (g, facts): (GuardId, Option<&GuardFacts>),
    exit: Vec<(Kind, Value)>,
    counting: Option<(Value, Value)>,
    token: u64,
    next_id: &mut u32,
) -> (Trace, Option<GuardId>) {
    let kinds: Vec<Kind> = exit.iter().map(|e| e.0).collect();
    let mut gen = Gen::new(rng, &kinds, (root, facts), *next_id, root.aliasing);
    gen.body(u64::from(g.0) << 8);
    let word = |v: Value| exit.iter().position(|e| e.1 == v);
    let mut params: Vec<Value> = match root.last_label() {
        Some(l) if counting.is_some() => root.label_params(l).map(Value::op).collect(),
        _ => Vec::new(),
    };
    // The label jumped to is a peeled loop's header: the body label's first parameters are
    // its parameters (the others carry loaded values, which the header loads itself).
    if let Some(n) = label_arity(root, token) {
        params.truncate(n);
    }
    let all_there = params.iter().all(|&p| word(p).is_some());
    let fuel = match counting.filter(|_| all_there) {
        Some((i, _)) => {
            let i_in = gen.inputs[word(i).expect("all there")];
            let limit = gen.b.const_int(gen.rng.range_i64(0, 24));
            let c = gen.b.op(Opcode::IntLt, &[i_in, limit]);
            let fail = gen.some_values();
            let fuel = gen.b.guard(Opcode::GuardTrue, &[c], &fail, 0xf0e1);
            let one = gen.b.const_int(1);
            let i2 = gen.b.op(Opcode::IntAdd, &[i_in, one]);
            let d = gen.b.const_int(gen.rng.range_i64(1, 4));
            let n2 = gen.b.op(Opcode::IntAdd, &[i2, d]);
            let mut args = vec![i2, n2];
            for &p in &params[2..] {
                let same = gen.inputs[word(p).expect("all there")];
                let v = match root.kind_of(p) {
                    Kind::Int if gen.rng.chance(1, 3) => gen.int(),
                    Kind::Float if gen.rng.chance(1, 3) => gen.float(),
                    _ => same,
                };
                args.push(v);
            }
            let d = gen.b.descr(Descr::Target(token));
            gen.b.op_with_descr(Opcode::Jump, &args, d);
            Some(fuel)
        }
        None => {
            let vals = gen.some_values();
            gen.b.finish(&vals);
            None
        }
    };
    let t = gen.b.build().expect("a well-formed bridge");
    *next_id = t.max_guard_id().map_or(*next_id, |g| g.0 + 1);
    (t, fuel)
}

/// A bridge out of guard `g` of `parent` (with what is known of its exit words) that
/// computes a little and finishes.
fn finishing_bridge(
    rng: &mut Rng,
    parent: &Trace,
    (g, facts): (GuardId, Option<&GuardFacts>),
    next_id: &mut u32,
) -> Trace {
    let kinds: Vec<Kind> = exit_of(parent, g).iter().map(|e| e.0).collect();
    let mut gen = Gen::new(rng, &kinds, (parent, facts), *next_id, parent.aliasing);
    gen.body(u64::from(g.0) << 8);
    let vals = gen.some_values();
    gen.b.finish(&vals);
    let t = gen.b.build().expect("a well-formed bridge");
    *next_id = t.max_guard_id().map_or(*next_id, |g| g.0 + 1);
    t
}
