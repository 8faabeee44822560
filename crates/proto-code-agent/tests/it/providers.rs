//! Providers over the wire: list, get, add, update, remove, the default
//! model, masked keys, catalog details, and the errors.

use crate::common;

use common::{PROVIDER, Server, guard};
use gantry_core::CreateThread;
use gantry_testkit::Step;
use gantry_types::ProviderKind;
use proto_code_agent::pb;
use tonic::Code;

fn provider(name: &str) -> pb::ProviderInfo {
    pb::ProviderInfo {
        name: name.into(),
        ..pb::ProviderInfo::default()
    }
}

fn model(id: &str) -> pb::ModelInfo {
    pb::ModelInfo {
        id: id.into(),
        ..pb::ModelInfo::default()
    }
}

/// Waits until the mock model server has received `n` requests.
async fn requests_reach(s: &Server, n: usize) {
    guard("the model request", async {
        while s.llm.request_count() < n {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_configured_provider_and_default_model_are_listed() {
    let mut s = Server::start(vec![]).await;
    let listed = s
        .client
        .list_providers(pb::ListProvidersRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(listed.default_provider.as_deref(), Some(PROVIDER));
    assert_eq!(listed.default_model.as_deref(), Some("test-model"));
    let [mock] = listed.providers.as_slice() else {
        panic!("{:?}", listed.providers)
    };
    assert_eq!(mock.name, PROVIDER);
    assert_eq!(
        mock.api_key.as_deref(),
        Some("***"),
        "short keys are hidden"
    );
    assert_eq!(mock.base_url.as_deref(), Some(s.llm.base_url().as_str()));
    let ids: Vec<&str> = mock.models.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["test-model"]);
    assert!(
        mock.models[0].cost.is_none(),
        "the catalog does not know it"
    );

    let default = s
        .client
        .get_default_model(pb::GetDefaultModelRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        (default.provider.as_deref(), default.model.as_deref()),
        (Some(PROVIDER), Some("test-model"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_added_vendor_provider_lists_the_catalogs_models_with_its_key_masked() {
    let mut s = Server::start(vec![]).await;
    let added = s
        .client
        .add_provider(pb::AddProviderRequest {
            provider: Some(pb::ProviderInfo {
                api_key: Some("sk-ant-0123456789abcdef".into()),
                ..provider("anthropic")
            }),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(added.success && added.error.is_empty());
    let info = added.provider.unwrap();
    assert_eq!(info.api_key.as_deref(), Some("sk-...cdef"));
    assert_eq!(info.base_url.as_deref(), Some("https://api.anthropic.com"));
    let sonnet = info
        .models
        .iter()
        .find(|m| m.id == "claude-sonnet-4-5")
        .expect("the catalog's Anthropic models");
    assert!(info.models.iter().all(|m| m.id.starts_with("claude")));
    assert!(sonnet.tool_call && sonnet.family.starts_with("claude"));
    assert!(sonnet.cost.unwrap().input > 0.0);
    assert_eq!(sonnet.limit.unwrap().context, 200_000);
    assert!(
        sonnet
            .modalities
            .as_ref()
            .unwrap()
            .input
            .contains(&"image".to_owned())
    );
    assert_eq!(
        s.engine.providers().get("anthropic").unwrap().kind,
        ProviderKind::Anthropic,
        "the kind is inferred from the name"
    );

    let got = s
        .client
        .get_provider(pb::GetProviderRequest {
            name: "anthropic".into(),
        })
        .await
        .unwrap()
        .into_inner()
        .provider
        .unwrap();
    assert_eq!(got, info);
    let names: Vec<String> = s
        .client
        .list_providers(pb::ListProvidersRequest {})
        .await
        .unwrap()
        .into_inner()
        .providers
        .into_iter()
        .map(|p| p.name)
        .collect();
    assert_eq!(names, ["anthropic", PROVIDER]);

    let removed = s
        .client
        .remove_provider(pb::RemoveProviderRequest {
            name: "anthropic".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(removed.success);
    let gone = s
        .client
        .get_provider(pb::GetProviderRequest {
            name: "anthropic".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(gone.code(), Code::NotFound, "{gone:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_added_provider_serves_the_default_model_and_keeps_its_key_on_update() {
    let mut s = Server::start(vec![
        Step::text("one"),
        Step::text("two"),
        Step::text("three"),
    ])
    .await;
    let added = s
        .client
        .add_provider(pb::AddProviderRequest {
            provider: Some(pb::ProviderInfo {
                api_key: Some("sk-local-0123456789".into()),
                base_url: Some(s.llm.base_url()),
                models: vec![model("local-model")],
                ..provider("local")
            }),
        })
        .await
        .unwrap()
        .into_inner()
        .provider
        .unwrap();
    assert_eq!(added.api_key.as_deref(), Some("sk-...6789"));
    assert_eq!(added.models[0].name, "local-model");
    assert_eq!(
        s.engine.providers().get("local").unwrap().kind,
        ProviderKind::OpenaiChat
    );

    let set = s
        .client
        .set_default_model(pb::SetDefaultModelRequest {
            provider: "local".into(),
            model: "local-model".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(set.success);
    assert_eq!(
        (set.provider.as_str(), set.model.as_str()),
        ("local", "local-model")
    );
    let default = s
        .client
        .get_default_model(pb::GetDefaultModelRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        (default.provider.as_deref(), default.model.as_deref()),
        (Some("local"), Some("local-model"))
    );

    // A thread naming no model gets the new default and reaches the
    // provider with its real key.
    let thread = s
        .engine
        .threads()
        .create(CreateThread {
            cwd: s.workspace(),
            ..CreateThread::default()
        })
        .await
        .unwrap();
    assert_eq!(thread.model, "local/local-model");
    s.engine.turns().queue(&thread.id, "hello").await.unwrap();
    requests_reach(&s, 1).await;
    let first = &s.llm.requests()[0];
    assert_eq!(first.body["model"], "local-model");
    assert_eq!(first.headers["authorization"], "Bearer sk-local-0123456789");

    // The listed provider sent back (masked key and all) keeps the key.
    let updated = s
        .client
        .update_provider(pb::UpdateProviderRequest {
            provider: Some(pb::ProviderInfo {
                models: vec![model("local-model"), model("gpt-4.1")],
                ..added.clone()
            }),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(updated.success);
    let info = updated.provider.unwrap();
    assert_eq!(info.api_key.as_deref(), Some("sk-...6789"));
    assert_eq!(info.models[1].limit.unwrap().context, 1_047_576);
    s.engine.turns().queue(&thread.id, "again").await.unwrap();
    requests_reach(&s, 2).await;
    assert_eq!(
        s.llm.requests()[1].headers["authorization"],
        "Bearer sk-local-0123456789"
    );

    // A new key replaces it; the rest stays.
    let rotated = s
        .client
        .update_provider(pb::UpdateProviderRequest {
            provider: Some(pb::ProviderInfo {
                api_key: Some("sk-rotated-9876543210".into()),
                ..provider("local")
            }),
        })
        .await
        .unwrap()
        .into_inner()
        .provider
        .unwrap();
    assert_eq!(rotated.base_url, added.base_url);
    assert_eq!(rotated.models.len(), 2);
    s.engine.turns().queue(&thread.id, "third").await.unwrap();
    requests_reach(&s, 3).await;
    assert_eq!(
        s.llm.requests()[2].headers["authorization"],
        "Bearer sk-rotated-9876543210"
    );

    // The default's provider cannot go while it is the default.
    let refused = s
        .client
        .remove_provider(pb::RemoveProviderRequest {
            name: "local".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::FailedPrecondition, "{refused:?}");
    assert!(refused.message().contains("default"), "{refused:?}");
    s.client
        .set_default_model(pb::SetDefaultModelRequest {
            provider: PROVIDER.into(),
            model: "test-model".into(),
        })
        .await
        .unwrap();
    s.client
        .remove_provider(pb::RemoveProviderRequest {
            name: "local".into(),
        })
        .await
        .unwrap();
    assert!(s.engine.providers().get("local").is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_and_unknown_providers_are_rejected() {
    let mut s = Server::start(vec![]).await;
    let c = &mut s.client;
    let add = |p: Option<pb::ProviderInfo>| pb::AddProviderRequest { provider: p };

    let e = c.add_provider(add(None)).await.unwrap_err();
    assert_eq!(
        (e.code(), e.message()),
        (Code::InvalidArgument, "provider: required")
    );
    let e = c.add_provider(add(Some(provider(" ")))).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().starts_with("provider.name"), "{e:?}");
    let e = c
        .add_provider(add(Some(provider("a/b"))))
        .await
        .unwrap_err();
    assert!(
        e.code() == Code::InvalidArgument && e.message().starts_with("provider.name"),
        "{e:?}"
    );
    let e = c
        .add_provider(add(Some(pb::ProviderInfo {
            base_url: Some("ftp://x".into()),
            ..provider("x")
        })))
        .await
        .unwrap_err();
    assert!(
        e.code() == Code::InvalidArgument && e.message().starts_with("provider.base_url"),
        "{e:?}"
    );
    let e = c
        .add_provider(add(Some(pb::ProviderInfo {
            models: vec![model("m"), model("")],
            ..provider("x")
        })))
        .await
        .unwrap_err();
    assert_eq!(
        (e.code(), e.message()),
        (Code::InvalidArgument, "provider.models[1].id: required")
    );
    let e = c
        .add_provider(add(Some(pb::ProviderInfo {
            models: vec![pb::ModelInfo {
                api_key: Some("sk-other".into()),
                ..model("m")
            }],
            ..provider("x")
        })))
        .await
        .unwrap_err();
    assert!(
        e.message().starts_with("provider.models[0].api_key"),
        "{e:?}"
    );
    let e = c
        .add_provider(add(Some(provider(PROVIDER))))
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::AlreadyExists, "{e:?}");
    assert!(s.engine.providers().get("x").is_err(), "nothing was added");

    let e = c
        .get_provider(pb::GetProviderRequest {
            name: "nope".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound, "{e:?}");
    let e = c
        .get_provider(pb::GetProviderRequest::default())
        .await
        .unwrap_err();
    assert_eq!(
        (e.code(), e.message()),
        (Code::InvalidArgument, "name: required")
    );
    let e = c
        .update_provider(pb::UpdateProviderRequest {
            provider: Some(provider("nope")),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound, "{e:?}");
    let e = c
        .update_provider(pb::UpdateProviderRequest { provider: None })
        .await
        .unwrap_err();
    assert_eq!(
        (e.code(), e.message()),
        (Code::InvalidArgument, "provider: required")
    );
    let e = c
        .remove_provider(pb::RemoveProviderRequest {
            name: "nope".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound, "{e:?}");
    // Defined in the configuration file: it would come back at restart.
    let e = c
        .remove_provider(pb::RemoveProviderRequest {
            name: PROVIDER.into(),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition, "{e:?}");

    let e = c
        .set_default_model(pb::SetDefaultModelRequest {
            provider: "nope".into(),
            model: "m".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound, "{e:?}");
    let e = c
        .set_default_model(pb::SetDefaultModelRequest {
            provider: PROVIDER.into(),
            model: " ".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(
        (e.code(), e.message()),
        (Code::InvalidArgument, "model: required")
    );
    let e = c
        .set_default_model(pb::SetDefaultModelRequest {
            provider: String::new(),
            model: "no-such-model".into(),
        })
        .await
        .unwrap_err();
    assert!(
        e.code() == Code::InvalidArgument && e.message().starts_with("model:"),
        "{e:?}"
    );
    assert_eq!(
        s.engine.providers().default_model(),
        format!("{PROVIDER}/test-model"),
        "unchanged"
    );
}
