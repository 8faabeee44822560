"""Providers and the default model. The server starts with no provider (a bare
HOME, no config file)."""

import grpc

from conftest import HANG_GUARD, code_of


def test_a_server_without_config_has_no_providers(gantry):
    pb, stub = gantry.pb, gantry.stub
    listed = stub.ListProviders(pb.ListProvidersRequest(), timeout=HANG_GUARD)
    assert list(listed.providers) == []
    assert not listed.HasField("default_provider")
    default = stub.GetDefaultModel(pb.GetDefaultModelRequest(), timeout=HANG_GUARD)
    assert default.model, "the engine's built-in default is reported"
    assert not default.HasField("provider"), "no provider serves it"


def test_an_added_provider_serves_the_default_model_with_its_real_key(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    llm = mock_llm([{"reply": {"text": "one"}}, {"reply": {"text": "two"}}])
    added = stub.AddProvider(
        pb.AddProviderRequest(
            provider=pb.ProviderInfo(
                name="local",
                api_key="sk-local-0123456789",
                base_url=llm.base_url,
                models=[pb.ModelInfo(id="local-model"), pb.ModelInfo(id="gpt-4.1")],
            )
        ),
        timeout=HANG_GUARD,
    )
    assert added.success and not added.error
    assert added.provider.api_key == "sk-...6789", "the key is masked"
    assert [m.id for m in added.provider.models] == ["local-model", "gpt-4.1"]
    gpt = added.provider.models[1]
    assert gpt.limit.context > 0 and gpt.cost.input > 0 and "text" in gpt.modalities.input

    got = stub.GetProvider(pb.GetProviderRequest(name="local"), timeout=HANG_GUARD).provider
    assert got == added.provider

    set_default = stub.SetDefaultModel(
        pb.SetDefaultModelRequest(provider="local", model="local-model"), timeout=HANG_GUARD
    )
    assert set_default.success
    assert (set_default.provider, set_default.model) == ("local", "local-model")
    default = stub.GetDefaultModel(pb.GetDefaultModelRequest(), timeout=HANG_GUARD)
    assert (default.provider, default.model) == ("local", "local-model")
    listed = stub.ListProviders(pb.ListProvidersRequest(), timeout=HANG_GUARD)
    assert [p.name for p in listed.providers] == ["local"]
    assert (listed.default_provider, listed.default_model) == ("local", "local-model")

    # A session naming the provider reaches it with the stored key.
    session = stub.CreateSession(
        pb.CreateSessionRequest(
            config=pb.SessionConfig(llm=pb.LLMConfig(provider="local", model="local-model"))
        ),
        timeout=HANG_GUARD,
    ).session_id
    stub.Generate(
        pb.GenerateRequest(session_id=session, messages=[pb.Message(role="user", content="hi")]),
        timeout=HANG_GUARD,
    )
    first = llm.requests()[0]
    assert first["body"]["model"] == "local-model"
    assert first["headers"]["authorization"] == "Bearer sk-local-0123456789"

    # A new key replaces the old one; what is left out stays.
    updated = stub.UpdateProvider(
        pb.UpdateProviderRequest(provider=pb.ProviderInfo(name="local", api_key="sk-rotated-9876543210")),
        timeout=HANG_GUARD,
    )
    assert updated.success
    assert updated.provider.api_key == "sk-...3210"
    assert updated.provider.base_url == llm.base_url
    assert len(updated.provider.models) == 2
    stub.Generate(
        pb.GenerateRequest(session_id=session, messages=[pb.Message(role="user", content="again")]),
        timeout=HANG_GUARD,
    )
    assert llm.requests()[1]["headers"]["authorization"] == "Bearer sk-rotated-9876543210"


def test_model_details_read_back_as_the_client_sent_them(gantry):
    pb, stub = gantry.pb, gantry.stub
    mock = pb.ModelInfo(
        id="mock-r1",
        name="Mock r1",
        family="mock",
        tool_call=True,
        reasoning=True,
        release_date="2026-01-02",
        modalities=pb.ModelModalitiesInfo(input=["text", "image"], output=["text"]),
        cost=pb.ModelCostInfo(input=0.5, output=1.5, cache_read=0.05, cache_write=0.6),
        limit=pb.ModelLimitInfo(context=32000, output=4096),
    )
    provider = pb.ProviderInfo(name="mock", base_url="http://127.0.0.1:9/v1", models=[mock, pb.ModelInfo(id="gpt-4.1")])
    added = stub.AddProvider(pb.AddProviderRequest(provider=provider), timeout=HANG_GUARD)
    assert added.success, added
    assert added.provider.models[0] == mock
    # A model sent by id alone is the catalog's.
    assert added.provider.models[1].name == "GPT-4.1" and added.provider.models[1].limit.context > 0
    got = stub.GetProvider(pb.GetProviderRequest(name="mock"), timeout=HANG_GUARD).provider
    assert list(got.models) == list(added.provider.models)
    listed = stub.ListProviders(pb.ListProvidersRequest(), timeout=HANG_GUARD).providers
    assert [m for p in listed if p.name == "mock" for m in p.models][0] == mock

    # An update's models replace the described ones; a removal forgets them.
    renamed = pb.ModelInfo(id="mock-r1", name="Mock r1 (2)", family="mock", tool_call=False)
    updated = stub.UpdateProvider(
        pb.UpdateProviderRequest(provider=pb.ProviderInfo(name="mock", models=[renamed])), timeout=HANG_GUARD
    )
    [model] = updated.provider.models
    assert (model.name, model.family, model.tool_call) == ("Mock r1 (2)", "mock", False)
    assert stub.RemoveProvider(pb.RemoveProviderRequest(name="mock"), timeout=HANG_GUARD).success
    again = stub.AddProvider(
        pb.AddProviderRequest(provider=pb.ProviderInfo(name="mock", models=[pb.ModelInfo(id="mock-r1")])),
        timeout=HANG_GUARD,
    )
    assert again.provider.models[0].name == "mock-r1", "nothing of the removed provider is left"


def test_providers_are_removed_unless_they_serve_the_default(gantry):
    pb, stub = gantry.pb, gantry.stub
    for name in ("anthropic", "openrouter"):
        stub.AddProvider(
            pb.AddProviderRequest(provider=pb.ProviderInfo(name=name, api_key=f"sk-{name}-0123456789")),
            timeout=HANG_GUARD,
        )
    anthropic = stub.GetProvider(pb.GetProviderRequest(name="anthropic"), timeout=HANG_GUARD).provider
    assert anthropic.base_url == "https://api.anthropic.com", "the kind follows the name"
    assert all(m.id.startswith("claude") for m in anthropic.models) and anthropic.models

    stub.SetDefaultModel(pb.SetDefaultModelRequest(provider="anthropic", model="claude-sonnet-4-5"), timeout=HANG_GUARD)
    code, details = code_of(lambda: stub.RemoveProvider(pb.RemoveProviderRequest(name="anthropic"), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.FAILED_PRECONDITION and "default" in details

    removed = stub.RemoveProvider(pb.RemoveProviderRequest(name="openrouter"), timeout=HANG_GUARD)
    assert removed.success and not removed.error
    names = [p.name for p in stub.ListProviders(pb.ListProvidersRequest(), timeout=HANG_GUARD).providers]
    assert names == ["anthropic"]
    code, _ = code_of(lambda: stub.GetProvider(pb.GetProviderRequest(name="openrouter"), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.NOT_FOUND


def test_bad_input_and_unknown_providers_are_rejected(gantry):
    pb, stub = gantry.pb, gantry.stub

    def add(**fields):
        return lambda: stub.AddProvider(pb.AddProviderRequest(**fields), timeout=HANG_GUARD)

    code, details = code_of(add())
    assert code == grpc.StatusCode.INVALID_ARGUMENT and details == "provider: required"
    code, details = code_of(add(provider=pb.ProviderInfo(name="a b")))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and details.startswith("provider.name")
    code, details = code_of(add(provider=pb.ProviderInfo(name="x", base_url="localhost:1234")))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and details.startswith("provider.base_url")
    code, details = code_of(add(provider=pb.ProviderInfo(name="x", models=[pb.ModelInfo()])))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and details == "provider.models[0].id: required"
    stub.AddProvider(pb.AddProviderRequest(provider=pb.ProviderInfo(name="x")), timeout=HANG_GUARD)
    code, _ = code_of(add(provider=pb.ProviderInfo(name="x")))
    assert code == grpc.StatusCode.ALREADY_EXISTS

    code, details = code_of(lambda: stub.GetProvider(pb.GetProviderRequest(), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and details == "name: required"
    code, _ = code_of(lambda: stub.GetProvider(pb.GetProviderRequest(name="nope"), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.NOT_FOUND
    code, _ = code_of(
        lambda: stub.UpdateProvider(pb.UpdateProviderRequest(provider=pb.ProviderInfo(name="nope")), timeout=HANG_GUARD)
    )
    assert code == grpc.StatusCode.NOT_FOUND
    code, details = code_of(
        lambda: stub.UpdateProvider(
            pb.UpdateProviderRequest(provider=pb.ProviderInfo(name="x", base_url="nope")), timeout=HANG_GUARD
        )
    )
    assert code == grpc.StatusCode.INVALID_ARGUMENT and details.startswith("provider.base_url")
    code, _ = code_of(lambda: stub.RemoveProvider(pb.RemoveProviderRequest(name="nope"), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.NOT_FOUND

    code, _ = code_of(
        lambda: stub.SetDefaultModel(pb.SetDefaultModelRequest(provider="nope", model="m"), timeout=HANG_GUARD)
    )
    assert code == grpc.StatusCode.NOT_FOUND
    code, details = code_of(lambda: stub.SetDefaultModel(pb.SetDefaultModelRequest(provider="x"), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and details == "model: required"
    code, details = code_of(
        lambda: stub.SetDefaultModel(pb.SetDefaultModelRequest(model="no-such-model"), timeout=HANG_GUARD)
    )
    assert code == grpc.StatusCode.INVALID_ARGUMENT and details.startswith("model:")
