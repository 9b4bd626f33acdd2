//! Python bindings of the gossiplab engine (`gossiplab._engine`).
//!
//! Deliberately thin: arrays cross the boundary as little-endian byte strings, which
//! the Python side wraps with numpy without copying element by element. The engine
//! crate itself has no pyo3 dependency and is tested on its own.

use gossiplab_engine::aggregate::{AggregateTables, Aggregates, NEVER, REACH_PERCENTS};
use gossiplab_engine::goroutines::{Waited, KIND_NAMES as GOROUTINE_NAMES, READIED_NAMES};
use gossiplab_engine::histogram::bin_bounds;
use gossiplab_engine::output::{MessageTraffic, Output};
use gossiplab_engine::partial::PartialRows;
use gossiplab_engine::rpc::KIND_NAMES;
use gossiplab_engine::{Config, EdgeProperties, EngineError as Refusal, Schedule, Simulation};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

// The engine's refusals, as typed exceptions (ValueError, so `except ValueError` still
// catches them); each carries `field`, the config setting or input array at fault.
pyo3::create_exception!(
    gossiplab._engine,
    EngineError,
    PyValueError,
    "The engine refused its inputs; `field` names the setting or array at fault."
);
pyo3::create_exception!(
    gossiplab._engine,
    ConfigError,
    EngineError,
    "A config setting is out of range or contradicts another; `field` is its dotted path."
);
pyo3::create_exception!(
    gossiplab._engine,
    InputError,
    EngineError,
    "The edges, schedule or per-edge arrays break an engine invariant; `field` names the array."
);

/// The Python exception for an engine error, with its `field` attribute set.
fn py_error(err: Refusal) -> PyErr {
    let py_err = match &err {
        Refusal::Config { .. } => ConfigError::new_err(err.to_string()),
        Refusal::Input { .. } => InputError::new_err(err.to_string()),
    };
    Python::attach(|py| {
        let value = py_err.value(py);
        value
            .setattr("field", err.field())
            .and_then(|()| value.setattr("reason", err.message()))
            .map(|()| py_err.clone_ref(py))
    })
    .unwrap_or(py_err)
}

fn read_le<const N: usize, T>(
    name: &str,
    bytes: &[u8],
    from: fn([u8; N]) -> T,
) -> PyResult<Vec<T>> {
    if !bytes.len().is_multiple_of(N) {
        let message = format!("{name}: {} bytes is not a multiple of {N}", bytes.len());
        return Err(py_error(Refusal::input(name, message)));
    }
    Ok(bytes
        .chunks_exact(N)
        .map(|c| from(c.try_into().expect("chunk of N bytes")))
        .collect())
}

fn to_le<const N: usize, T: Copy>(values: &[T], to: fn(T) -> [u8; N]) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len() * N);
    for &v in values {
        out.extend_from_slice(&to(v));
    }
    out
}

/// A simulation in progress.
#[pyclass(module = "gossiplab._engine")]
struct Engine {
    sim: Simulation,
}

#[pymethods]
impl Engine {
    /// `edges`: (dialer, listener) u32 pairs; schedule columns as little-endian arrays
    /// (t_intended u64, publisher u32, size u32, topic u16, batch u32). Optionally a
    /// one-way latency (u64 ns) and a segment loss (f64) per edge and direction: entry
    /// 2 i is edge i from dialer to listener, 2 i + 1 the way back.
    #[new]
    #[pyo3(signature = (config_json, edges, t_intended, publisher, size, topic, batch, edge_latency=None, edge_loss=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        config_json: &str,
        edges: &[u8],
        t_intended: &[u8],
        publisher: &[u8],
        size: &[u8],
        topic: &[u8],
        batch: &[u8],
        edge_latency: Option<&[u8]>,
        edge_loss: Option<&[u8]>,
    ) -> PyResult<Self> {
        let config = Config::from_json(config_json).map_err(py_error)?;
        let flat = read_le("edges", edges, u32::from_le_bytes)?;
        if !flat.len().is_multiple_of(2) {
            let message = "edges: odd number of endpoints";
            return Err(py_error(Refusal::input("edges", message)));
        }
        let pairs: Vec<(u32, u32)> = flat.chunks_exact(2).map(|c| (c[0], c[1])).collect();
        let schedule = Schedule {
            t_intended_ns: read_le("t_intended", t_intended, u64::from_le_bytes)?,
            publisher: read_le("publisher", publisher, u32::from_le_bytes)?,
            size: read_le("size", size, u32::from_le_bytes)?,
            topic: read_le("topic", topic, u16::from_le_bytes)?,
            batch: read_le("batch", batch, u32::from_le_bytes)?,
        };
        let properties = EdgeProperties {
            latency_ns: read_le(
                "edge_latency",
                edge_latency.unwrap_or_default(),
                u64::from_le_bytes,
            )?,
            loss: read_le(
                "edge_loss",
                edge_loss.unwrap_or_default(),
                f64::from_le_bytes,
            )?,
        };
        let sim = Simulation::with_edge_properties(&config, &pairs, &properties, &schedule)
            .map_err(py_error)?;
        Ok(Self { sim })
    }

    /// Run up to simulated time `t_ns` without holding the GIL; True once finished.
    fn run_until(&mut self, py: Python<'_>, t_ns: u64) -> bool {
        let sim = &mut self.sim;
        py.detach(|| {
            sim.run_until(t_ns);
            sim.is_finished()
        })
    }

    #[getter]
    fn now(&self) -> u64 {
        self.sim.now()
    }

    #[getter]
    fn end(&self) -> u64 {
        self.sim.end()
    }

    #[getter]
    fn events(&self) -> u64 {
        self.sim.events()
    }

    /// Peers in `node`'s mesh for `topic`.
    fn mesh(&self, node: u32, topic: u16) -> Vec<u32> {
        self.sim.mesh_peers(node, topic)
    }

    /// Entries of per-message state held now (seen cache, message cache, ...).
    fn live_state<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let l = self.sim.live_state();
        let d = PyDict::new(py);
        for (name, value) in [
            ("seen", l.seen),
            ("mcache_ids", l.mcache_ids),
            ("mcache_served", l.mcache_served),
            ("validating", l.validating),
            ("announced", l.announced),
            ("unwanted", l.unwanted),
            ("promises", l.promises),
            ("rpc_slots", l.rpc_slots),
            ("events", l.events),
            ("deliveries", l.deliveries),
        ] {
            d.set_item(name, value)?;
        }
        Ok(d)
    }

    /// The event tables as {table: {column: little-endian bytes}} plus code names. In
    /// aggregate mode there is no deliveries table but messages, receivers,
    /// latency_histogram and duplicates_histogram. With CPU costs, resources.
    fn tables<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = self.sim.output();
        let tables = PyDict::new(py);
        tables.set_item("publishes", publishes(py, &self.sim)?)?;
        match (&out.aggregates, self.sim.aggregate_tables()) {
            (Some(a), Some(t)) => aggregate_tables(py, &tables, a, &t)?,
            _ => tables.set_item("deliveries", deliveries(py, out)?)?,
        }
        if let Some(r) = &out.receipts {
            let d = PyDict::new(py);
            d.set_item("msg", PyBytes::new(py, &to_le(&r.msg, u32::to_le_bytes)))?;
            d.set_item("node", PyBytes::new(py, &to_le(&r.node, u32::to_le_bytes)))?;
            d.set_item(
                "from_node",
                PyBytes::new(py, &to_le(&r.from_node, u32::to_le_bytes)),
            )?;
            d.set_item("t_ns", PyBytes::new(py, &to_le(&r.t_ns, i64::to_le_bytes)))?;
            let dup: Vec<u8> = r.duplicate.iter().map(|&b| u8::from(b)).collect();
            d.set_item("duplicate", PyBytes::new(py, &dup))?;
            tables.set_item("receipts", d)?;
        }
        tables.set_item("traffic", traffic(py, out)?)?;
        tables.set_item("drops", drops(py, out)?)?;
        let c = &out.connections;
        let d = PyDict::new(py);
        d.set_item("t_ns", PyBytes::new(py, &to_le(&c.t_ns, i64::to_le_bytes)))?;
        d.set_item("node", PyBytes::new(py, &to_le(&c.node, u32::to_le_bytes)))?;
        d.set_item("peer", PyBytes::new(py, &to_le(&c.peer, u32::to_le_bytes)))?;
        tables.set_item("connections", d)?;
        if let Some(per_message) = &out.message_traffic {
            tables.set_item("message_traffic", message_traffic(py, per_message)?)?;
        }
        if let Some(c) = self.sim.cpu_samples() {
            // node, t_ns and cpu_ns (cumulative CPU time): the model's part of `resources`.
            let d = PyDict::new(py);
            d.set_item("node", PyBytes::new(py, &to_le(&c.node, u32::to_le_bytes)))?;
            d.set_item("t_ns", PyBytes::new(py, &to_le(&c.t_ns, i64::to_le_bytes)))?;
            d.set_item(
                "cpu_ns",
                PyBytes::new(py, &to_le(&c.cpu_ns, u64::to_le_bytes)),
            )?;
            // On time-sliced hosts the threads' switches, and sysmon's runs with it.
            let counted = [
                ("voluntary_switches", &c.voluntary_switches),
                ("involuntary_switches", &c.involuntary_switches),
                ("sysmon_runs", &c.sysmon_runs),
                ("sysmon_ns", &c.sysmon_ns),
            ];
            for (name, column) in counted {
                if !column.is_empty() {
                    d.set_item(name, PyBytes::new(py, &to_le(column, u64::to_le_bytes)))?;
                }
            }
            tables.set_item("resources", d)?;
        }
        if let Some(rows) = self.sim.partial_rows() {
            tables.set_item("partial", partial(py, &rows)?)?;
        }
        let waits = self.sim.goroutine_waits();
        if !waits.is_empty() {
            tables.set_item("goroutine_waits", goroutine_waits(py, &waits)?)?;
            tables.set_item("goroutine_names", GOROUTINE_NAMES.to_vec())?;
            tables.set_item("readied_names", READIED_NAMES.to_vec())?;
        }
        tables.set_item("kind_names", KIND_NAMES.to_vec())?;
        Ok(tables)
    }
}

/// node, goroutine (kind codes, `goroutine_names`), t_ns (when the wait ended), wait_ns,
/// ran_ns (how long a node then held its core; 0 for a goroutine) and readied_by (codes
/// into `goroutine_names` followed by `readied_names`; `NOT_READIED` for a node's or
/// `sysmon`'s own waits) columns.
fn goroutine_waits<'py>(py: Python<'py>, waits: &[Waited]) -> PyResult<Bound<'py, PyDict>> {
    let node: Vec<u32> = waits.iter().map(|w| w.node).collect();
    let kind: Vec<u8> = waits.iter().map(|w| w.kind).collect();
    let at: Vec<i64> = waits.iter().map(|w| w.at as i64).collect();
    let wait: Vec<u64> = waits.iter().map(|w| w.wait).collect();
    let ran: Vec<u64> = waits.iter().map(|w| w.ran).collect();
    let readied: Vec<u8> = waits
        .iter()
        .map(|w| w.readied.map_or(NOT_READIED, |r| r.code()))
        .collect();
    let d = PyDict::new(py);
    d.set_item("node", PyBytes::new(py, &to_le(&node, u32::to_le_bytes)))?;
    d.set_item("goroutine", PyBytes::new(py, &kind))?;
    d.set_item("t_ns", PyBytes::new(py, &to_le(&at, i64::to_le_bytes)))?;
    d.set_item("wait_ns", PyBytes::new(py, &to_le(&wait, u64::to_le_bytes)))?;
    d.set_item("ran_ns", PyBytes::new(py, &to_le(&ran, u64::to_le_bytes)))?;
    d.set_item("readied_by", PyBytes::new(py, &readied))?;
    Ok(d)
}

/// The `readied_by` code of a wait that is not a goroutine's.
const NOT_READIED: u8 = u8::MAX;

fn publishes<'py>(py: Python<'py>, sim: &Simulation) -> PyResult<Bound<'py, PyDict>> {
    let m = sim.messages();
    let d = PyDict::new(py);
    let msg: Vec<u32> = (0..m.len() as u32).collect();
    let col = |f: fn(&gossiplab_engine::Message) -> u64| -> Vec<u64> { m.iter().map(f).collect() };
    d.set_item("msg", PyBytes::new(py, &to_le(&msg, u32::to_le_bytes)))?;
    let publisher: Vec<u32> = m.iter().map(|x| x.publisher).collect();
    d.set_item(
        "publisher",
        PyBytes::new(py, &to_le(&publisher, u32::to_le_bytes)),
    )?;
    let intended: Vec<i64> = m.iter().map(|x| x.t_intended as i64).collect();
    d.set_item(
        "t_intended_ns",
        PyBytes::new(py, &to_le(&intended, i64::to_le_bytes)),
    )?;
    // A message the run ended before publishing has t_publish -1.
    let published: Vec<i64> = m
        .iter()
        .map(|x| x.t_publish.map_or(-1, |t| t as i64))
        .collect();
    d.set_item(
        "t_publish_ns",
        PyBytes::new(py, &to_le(&published, i64::to_le_bytes)),
    )?;
    let size: Vec<u32> = m.iter().map(|x| x.size).collect();
    d.set_item("size", PyBytes::new(py, &to_le(&size, u32::to_le_bytes)))?;
    let topic: Vec<u16> = m.iter().map(|x| x.topic).collect();
    d.set_item("topic", PyBytes::new(py, &to_le(&topic, u16::to_le_bytes)))?;
    let batch: Vec<u32> = m.iter().map(|x| x.batch).collect();
    d.set_item("batch", PyBytes::new(py, &to_le(&batch, u32::to_le_bytes)))?;
    d.set_item(
        "receipts",
        PyBytes::new(py, &to_le(&col(|x| x.receipts), u64::to_le_bytes)),
    )?;
    let out = sim.output();
    let own: Vec<u32> = (0..m.len() as u32)
        .map(|i| out.publisher_duplicates(i))
        .collect();
    d.set_item(
        "publisher_duplicates",
        PyBytes::new(py, &to_le(&own, u32::to_le_bytes)),
    )?;
    Ok(d)
}

fn deliveries<'py>(py: Python<'py>, out: &Output) -> PyResult<Bound<'py, PyDict>> {
    let r = &out.deliveries;
    let d = PyDict::new(py);
    d.set_item("msg", PyBytes::new(py, &to_le(&r.msg, u32::to_le_bytes)))?;
    d.set_item("node", PyBytes::new(py, &to_le(&r.node, u32::to_le_bytes)))?;
    d.set_item("t_ns", PyBytes::new(py, &to_le(&r.t_ns, i64::to_le_bytes)))?;
    d.set_item(
        "from_node",
        PyBytes::new(py, &to_le(&r.from_node, u32::to_le_bytes)),
    )?;
    d.set_item("hop", PyBytes::new(py, &to_le(&r.hop, u16::to_le_bytes)))?;
    d.set_item(
        "duplicates",
        PyBytes::new(py, &to_le(&r.duplicates, u32::to_le_bytes)),
    )?;
    Ok(d)
}

/// A time, or -1 when it never happened.
fn time_or_minus_one(t: u64) -> i64 {
    if t == NEVER {
        -1
    } else {
        t as i64
    }
}

fn aggregate_tables(
    py: Python<'_>,
    tables: &Bound<'_, PyDict>,
    a: &Aggregates,
    t: &AggregateTables,
) -> PyResult<()> {
    let m = &a.messages;
    let d = PyDict::new(py);
    let msg: Vec<u32> = (0..m.len() as u32).collect();
    let u32s = |f: fn(&gossiplab_engine::aggregate::MessageAggregate) -> u32| -> Vec<u8> {
        to_le(&m.iter().map(f).collect::<Vec<_>>(), u32::to_le_bytes)
    };
    let u16s = |f: fn(&gossiplab_engine::aggregate::MessageAggregate) -> u16| -> Vec<u8> {
        to_le(&m.iter().map(f).collect::<Vec<_>>(), u16::to_le_bytes)
    };
    let times = |f: &dyn Fn(&gossiplab_engine::aggregate::MessageAggregate) -> u64| -> Vec<u8> {
        let v: Vec<i64> = m.iter().map(|x| time_or_minus_one(f(x))).collect();
        to_le(&v, i64::to_le_bytes)
    };
    d.set_item("msg", PyBytes::new(py, &to_le(&msg, u32::to_le_bytes)))?;
    d.set_item("targets", PyBytes::new(py, &u32s(|x| x.targets)))?;
    d.set_item(
        "first_receipts",
        PyBytes::new(py, &u32s(|x| x.first_receipts)),
    )?;
    d.set_item("delivered", PyBytes::new(py, &u32s(|x| x.delivered)))?;
    d.set_item("first_ns", PyBytes::new(py, &times(&|x| x.first_ns)))?;
    d.set_item("last_ns", PyBytes::new(py, &times(&|x| x.last_ns)))?;
    d.set_item("last_hop", PyBytes::new(py, &u16s(|x| x.last_hop)))?;
    d.set_item("max_hop", PyBytes::new(py, &u16s(|x| x.max_hop)))?;
    for (i, p) in REACH_PERCENTS.iter().enumerate() {
        let name = format!("reach_{p}_ns");
        d.set_item(name, PyBytes::new(py, &times(&|x| x.reach_ns[i])))?;
    }
    tables.set_item("messages", d)?;

    let nodes = &a.nodes;
    let node: Vec<u32> = (0..nodes.len() as u32).collect();
    let d = PyDict::new(py);
    d.set_item("node", PyBytes::new(py, &to_le(&node, u32::to_le_bytes)))?;
    let u64s = |v: Vec<u64>| to_le(&v, u64::to_le_bytes);
    let i64s = |v: Vec<i64>| to_le(&v, i64::to_le_bytes);
    let col = |f: fn(&gossiplab_engine::aggregate::NodeAggregate) -> u64| -> Vec<u64> {
        nodes.iter().map(f).collect()
    };
    d.set_item(
        "first_receipts",
        PyBytes::new(py, &u64s(col(|n| n.first_receipts))),
    )?;
    d.set_item(
        "latency_sum_ns",
        PyBytes::new(py, &u64s(col(|n| n.latency_sum_ns))),
    )?;
    let (min, max): (Vec<i64>, Vec<i64>) = nodes
        .iter()
        .map(|n| {
            if n.first_receipts == 0 {
                (-1, -1)
            } else {
                (n.latency_min_ns as i64, n.latency_max_ns as i64)
            }
        })
        .unzip();
    d.set_item("latency_min_ns", PyBytes::new(py, &i64s(min)))?;
    d.set_item("latency_max_ns", PyBytes::new(py, &i64s(max)))?;
    d.set_item("hop_sum", PyBytes::new(py, &u64s(col(|n| n.hop_sum))))?;
    d.set_item(
        "duplicates",
        PyBytes::new(py, &u64s(t.node_duplicates.clone())),
    )?;
    tables.set_item("receivers", d)?;

    let (mut node, mut bin, mut lo, mut hi, mut count) = (vec![], vec![], vec![], vec![], vec![]);
    for (n, bins) in t.latency_bins.iter().enumerate() {
        for &(b, c) in bins {
            let (low, high) = bin_bounds(b);
            node.push(n as u32);
            bin.push(b);
            lo.push(i64::try_from(low).unwrap_or(i64::MAX));
            // Exclusive upper bound, as the Python side reads it.
            hi.push(i64::try_from(high.saturating_add(1)).unwrap_or(i64::MAX));
            count.push(c);
        }
    }
    let d = PyDict::new(py);
    d.set_item("node", PyBytes::new(py, &to_le(&node, u32::to_le_bytes)))?;
    d.set_item("bin", PyBytes::new(py, &to_le(&bin, u16::to_le_bytes)))?;
    d.set_item("lo_ns", PyBytes::new(py, &i64s(lo)))?;
    d.set_item("hi_ns", PyBytes::new(py, &i64s(hi)))?;
    d.set_item("count", PyBytes::new(py, &u64s(count)))?;
    tables.set_item("latency_histogram", d)?;

    let (dups, pairs): (Vec<u32>, Vec<u64>) = t
        .duplicates
        .iter()
        .enumerate()
        .filter(|(_, &c)| c > 0)
        .map(|(d, &c)| (d as u32, c))
        .unzip();
    let d = PyDict::new(py);
    d.set_item(
        "duplicates",
        PyBytes::new(py, &to_le(&dups, u32::to_le_bytes)),
    )?;
    d.set_item("pairs", PyBytes::new(py, &u64s(pairs)))?;
    tables.set_item("duplicates_histogram", d)?;
    Ok(())
}

/// The `partial` table: a row per (group, node) but the group's publisher; `role` as
/// the engine's code (0 none, 1 supports, 2 requests), `t_complete_ns` -1 when never.
fn partial<'py>(py: Python<'py>, r: &PartialRows) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let u32s = [
        ("msg", &r.msg),
        ("node", &r.node),
        ("parts", &r.parts),
        ("held", &r.held),
        ("parts_recv", &r.parts_recv),
        ("parts_dup", &r.parts_dup),
        ("full_recv", &r.full_recv),
    ];
    for (name, column) in u32s {
        d.set_item(name, PyBytes::new(py, &to_le(column, u32::to_le_bytes)))?;
    }
    d.set_item("role", PyBytes::new(py, &r.role))?;
    d.set_item(
        "t_complete_ns",
        PyBytes::new(py, &to_le(&r.t_complete_ns, i64::to_le_bytes)),
    )?;
    d.set_item(
        "bytes_partial_recv",
        PyBytes::new(py, &to_le(&r.bytes_partial_recv, u64::to_le_bytes)),
    )?;
    Ok(d)
}

/// msg, kind, msgs_sent, bytes_sent: a row per message and kind that sent anything.
fn message_traffic<'py>(py: Python<'py>, t: &MessageTraffic) -> PyResult<Bound<'py, PyDict>> {
    let (mut msg, mut kind, mut sent, mut bytes) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (m, counts) in t.counts.iter().enumerate() {
        for (k, &(n, b)) in counts.iter().enumerate().filter(|(_, c)| c.0 > 0) {
            msg.push(m as u32);
            kind.push(k as u8);
            sent.push(n);
            bytes.push(b);
        }
    }
    let d = PyDict::new(py);
    d.set_item("msg", PyBytes::new(py, &to_le(&msg, u32::to_le_bytes)))?;
    d.set_item("kind", PyBytes::new(py, &kind))?;
    d.set_item(
        "msgs_sent",
        PyBytes::new(py, &to_le(&sent, u64::to_le_bytes)),
    )?;
    d.set_item(
        "bytes_sent",
        PyBytes::new(py, &to_le(&bytes, u64::to_le_bytes)),
    )?;
    Ok(d)
}

fn traffic<'py>(py: Python<'py>, out: &Output) -> PyResult<Bound<'py, PyDict>> {
    let (mut node, mut kind) = (Vec::new(), Vec::new());
    let (mut ms, mut bs, mut mr, mut br) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut es, mut er) = (Vec::new(), Vec::new());
    for (n, counters) in out.traffic.iter().enumerate() {
        for (k, c) in counters.iter().enumerate() {
            node.push(n as u32);
            kind.push(k as u8);
            ms.push(c.msgs_sent);
            bs.push(c.bytes_sent);
            mr.push(c.msgs_recv);
            br.push(c.bytes_recv);
            es.push(c.entries_sent);
            er.push(c.entries_recv);
        }
    }
    let d = PyDict::new(py);
    d.set_item("node", PyBytes::new(py, &to_le(&node, u32::to_le_bytes)))?;
    d.set_item("kind", PyBytes::new(py, &kind))?;
    d.set_item("msgs_sent", PyBytes::new(py, &to_le(&ms, u64::to_le_bytes)))?;
    d.set_item(
        "bytes_sent",
        PyBytes::new(py, &to_le(&bs, u64::to_le_bytes)),
    )?;
    d.set_item("msgs_recv", PyBytes::new(py, &to_le(&mr, u64::to_le_bytes)))?;
    d.set_item(
        "bytes_recv",
        PyBytes::new(py, &to_le(&br, u64::to_le_bytes)),
    )?;
    let entries = |v: &[u64]| PyBytes::new(py, &to_le(v, u64::to_le_bytes));
    d.set_item("entries_sent", entries(&es))?;
    d.set_item("entries_recv", entries(&er))?;
    Ok(d)
}

fn drops<'py>(py: Python<'py>, out: &Output) -> PyResult<Bound<'py, PyDict>> {
    let (mut node, mut peer, mut kind, mut reason, mut count) =
        (vec![], vec![], vec![], vec![], vec![]);
    for (key, &c) in &out.drops {
        node.push(key.node);
        peer.push(key.peer);
        kind.push(key.kind);
        reason.push(key.reason);
        count.push(c);
    }
    let d = PyDict::new(py);
    d.set_item("node", PyBytes::new(py, &to_le(&node, u32::to_le_bytes)))?;
    d.set_item("peer", PyBytes::new(py, &to_le(&peer, u32::to_le_bytes)))?;
    d.set_item("kind", PyBytes::new(py, &kind))?;
    d.set_item("reason", reason)?;
    d.set_item("count", PyBytes::new(py, &to_le(&count, u64::to_le_bytes)))?;
    Ok(d)
}

#[pymodule]
fn _engine(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Engine>()?;
    m.add("EngineError", m.py().get_type::<EngineError>())?;
    m.add("ConfigError", m.py().get_type::<ConfigError>())?;
    m.add("InputError", m.py().get_type::<InputError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
