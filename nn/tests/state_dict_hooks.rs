//! State-dict hooks on `Hooked` modules: the order and prefixes PyTorch gives
//! `register_state_dict_pre_hook` / `_post_hook` and `register_load_state_dict_pre_hook` /
//! `_post_hook` on a nested Sequential, the keys a save post-hook sees, a load whose hooks
//! rename an old checkpoint's key and excuse a missing one, and a save post-hook that edits
//! the dict — against `data/state_dict_hooks_ref.txt`, written by
//! `scripts/state_dict_hooks_reference.py` (PyTorch 2.x). Then removal and errors.

use kiln_core::{DType, Error, Result, Tensor};
use kiln_nn::{Hooked, Hooks, IncompatibleKeys, Linear, Module, Sequential, StateDict};
use std::sync::{Arc, Mutex};

const REFERENCE: &str = include_str!("data/state_dict_hooks_ref.txt");

fn reference(scenario: &str) -> Vec<String> {
    REFERENCE
        .lines()
        .filter(|l| l.starts_with(&format!("{scenario} ")))
        .map(String::from)
        .collect()
}

type Log = Arc<Mutex<Vec<String>>>;

/// PyTorch's `Sequential(Linear(2, 2), Sequential(Linear(2, 1)))`, every module hooked, and
/// each one's hook table by the name the reference uses.
struct Net {
    root: Hooked<Sequential>,
    l0: Hooks<Linear>,
    s1: Hooks<Sequential>,
    l10: Hooks<Linear>,
}

fn net() -> Result<Net> {
    let l0 = Hooked::new(Linear::new(2, 2)?);
    let l10 = Hooked::new(Linear::new(2, 1)?);
    let (h0, h10) = (l0.hooks(), l10.hooks());
    let s1 = Hooked::new(Sequential::new().add(l10));
    let h1 = s1.hooks();
    Ok(Net {
        root: Hooked::new(Sequential::new().add(l0).add(s1)),
        l0: h0,
        s1: h1,
        l10: h10,
    })
}

/// The values of the module's state-dict entry `key`.
fn value(m: &Hooked<Sequential>, key: &str) -> Result<Vec<f32>> {
    m.state_dict()
        .get(key)
        .expect("a state-dict key")
        .to_vec::<f32>()
}

fn joined<'a>(keys: impl Iterator<Item = &'a str>) -> String {
    keys.collect::<Vec<_>>().join(",")
}

fn log_every_hook<M: 'static>(hooks: &Hooks<M>, name: &'static str, log: &Log) {
    let l = log.clone();
    hooks.register_state_dict_pre_hook(move |_, prefix| {
        l.lock()
            .unwrap()
            .push(format!("A save_pre {name} prefix={prefix}"));
    });
    let l = log.clone();
    hooks.register_state_dict_post_hook(move |_, sd, prefix| {
        l.lock().unwrap().push(format!(
            "A save_post {name} prefix={prefix} keys={}",
            joined(sd.keys())
        ));
    });
    let l = log.clone();
    hooks.register_load_state_dict_pre_hook(move |_, sd, prefix| {
        let keys = if name == "root" {
            format!(" keys={}", joined(sd.keys()))
        } else {
            String::new()
        };
        l.lock()
            .unwrap()
            .push(format!("A load_pre {name} prefix={prefix}{keys}"));
        Ok(())
    });
    let l = log.clone();
    hooks.register_load_state_dict_post_hook(move |_, _| {
        l.lock().unwrap().push(format!("A load_post {name}"));
        Ok(())
    });
}

fn result(r: &IncompatibleKeys) -> String {
    format!(
        "result missing={} unexpected={}",
        r.missing_keys.join(","),
        r.unexpected_keys.join(",")
    )
}

/// The lines of `lines` whose event is `event`.
fn events(lines: &[String], event: &str) -> Vec<String> {
    lines
        .iter()
        .filter(|l| l.split(' ').nth(1) == Some(event))
        .cloned()
        .collect()
}

#[test]
fn hooks_run_in_pytorchs_order_with_pytorchs_prefixes() -> Result<()> {
    let mut n = net()?;
    let log: Log = Arc::default();
    log_every_hook(&n.root.hooks(), "root", &log);
    log_every_hook(&n.l0, "0", &log);
    log_every_hook(&n.s1, "1", &log);
    log_every_hook(&n.l10, "1.0", &log);
    let sd = n.root.state_dict();
    log.lock()
        .unwrap()
        .push(format!("A result keys={}", joined(sd.keys())));
    let mut sd2: StateDict = sd.into_iter().filter(|(k, _)| k != "1.0.bias").collect();
    sd2.insert("extra", Tensor::zeros([1], DType::F32)?);
    let r = n.root.load_state_dict(&sd2, false)?;
    log.lock().unwrap().push(format!("A {}", result(&r)));
    let got = log.lock().unwrap().clone();
    let want = reference("A");
    // Saving: every hook in PyTorch's order, with the keys each post-hook sees.
    for event in ["save_pre", "save_post", "load_pre", "load_post", "result"] {
        assert_eq!(events(&got, event), events(&want, event), "{event}");
    }
    let saving = |lines: &[String]| -> Vec<String> {
        lines
            .iter()
            .filter(|l| l.contains(" save_") || l.contains(" keys=0."))
            .cloned()
            .collect()
    };
    assert_eq!(saving(&got), saving(&want));
    Ok(())
}

#[test]
fn load_hooks_rename_an_old_key_and_excuse_a_missing_one() -> Result<()> {
    let mut n = net()?;
    let source = net()?;
    let mut old: StateDict = source
        .root
        .state_dict()
        .into_iter()
        .filter(|(k, _)| k != "1.0.bias")
        .collect();
    let w = old.remove("1.0.weight").unwrap();
    old.insert("1.0.w", w.clone());
    // Without hooks a strict load names both keys, and writes nothing.
    let before = value(&n.root, "0.weight")?;
    let err = n.root.load_state_dict(&old, true).unwrap_err().to_string();
    assert!(
        err.contains("Missing key(s) in state_dict: \"1.0.weight\", \"1.0.bias\".")
            && err.contains("Unexpected key(s) in state_dict: \"1.0.w\"."),
        "{err}"
    );
    assert_eq!(value(&n.root, "0.weight")?, before);
    n.l10.register_load_state_dict_pre_hook(|_, sd, prefix| {
        if let Some(t) = sd.remove(&format!("{prefix}w")) {
            sd.insert(format!("{prefix}weight"), t);
        }
        Ok(())
    });
    let excuse = n.l10.register_load_state_dict_post_hook(|_, keys| {
        keys.missing_keys.retain(|k| k != "1.0.bias");
        Ok(())
    });
    let r = n.root.load_state_dict(&old, true)?;
    assert_eq!(vec![format!("B {}", result(&r))], reference("B"));
    assert_eq!(value(&n.root, "1.0.weight")?, w.to_vec::<f32>()?);
    // Without the excuse the strict load fails on the key left, after writing (PyTorch).
    excuse.remove();
    let err = n.root.load_state_dict(&old, true).unwrap_err().to_string();
    assert!(
        err.contains("Missing key(s) in state_dict: \"1.0.bias\".") && !err.contains("weight"),
        "{err}"
    );
    Ok(())
}

#[test]
fn a_save_post_hook_edits_the_dict() -> Result<()> {
    let n = net()?;
    n.l0.register_state_dict_post_hook(|_, sd, prefix| {
        sd.remove(&format!("{prefix}bias"));
        sd.insert(
            format!("{prefix}scale"),
            Tensor::ones([1], DType::F32).unwrap(),
        );
    });
    let keys = joined(n.root.state_dict().keys());
    assert_eq!(vec![format!("C result keys={keys}")], reference("C"));
    Ok(())
}

#[test]
fn removed_hooks_stop_and_hook_errors_reach_the_caller() -> Result<()> {
    let mut n = net()?;
    let calls = Arc::new(Mutex::new(0));
    let c = calls.clone();
    let h = n.l0.register_state_dict_post_hook(move |m, sd, prefix| {
        // The hook gets the module itself.
        assert_eq!(m.weight.shape(), &[2, 2]);
        assert!(sd.contains_key(&format!("{prefix}weight")));
        *c.lock().unwrap() += 1;
    });
    n.root.state_dict();
    h.remove();
    n.root.state_dict();
    assert_eq!(*calls.lock().unwrap(), 1);

    let sd = n.root.state_dict();
    let before = sd.get("0.weight").unwrap().to_vec::<f32>()?;
    let zeros: StateDict = sd
        .iter()
        .map(|(k, t)| (k.to_string(), t.zeros_like().unwrap()))
        .collect();
    let h = n.s1.register_load_state_dict_pre_hook(|_, _, prefix| {
        Err(Error::value(
            "load_state_dict",
            format!("refused at prefix {prefix}"),
        ))
    });
    let err = n
        .root
        .load_state_dict(&zeros, true)
        .unwrap_err()
        .to_string();
    assert!(err.contains("refused at prefix 1."), "{err}");
    // A pre-hook error comes before anything is written.
    assert_eq!(value(&n.root, "0.weight")?, before);
    h.remove();
    let h = n.l10.register_load_state_dict_post_hook(|_, _| {
        Err(Error::value("load_state_dict", "post-hook refused"))
    });
    let err = n
        .root
        .load_state_dict(&zeros, true)
        .unwrap_err()
        .to_string();
    assert!(err.contains("post-hook refused"), "{err}");
    h.remove();
    n.root.load_state_dict(&zeros, true)?;
    assert!(value(&n.root, "0.weight")?.iter().all(|&v| v == 0.0));
    Ok(())
}
