"""The todo list."""

import grpc

from conftest import HANG_GUARD, code_of


def test_the_todo_list_is_replaced_and_read_back(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    session = gantry.session(mock_llm([]))
    assert not stub.GetTodos(pb.GetTodosRequest(session_id=session), timeout=HANG_GUARD).todos
    todos = [
        pb.Todo(id="1", content="write the parser", status="in_progress", priority="high"),
        pb.Todo(id="2", content="document it"),
    ]
    reply = stub.SetTodos(pb.SetTodosRequest(session_id=session, todos=todos), timeout=HANG_GUARD)
    assert reply.success
    assert [(t.id, t.status, t.priority) for t in reply.todos] == [("1", "in_progress", "high"), ("2", "pending", "medium")]
    got = stub.GetTodos(pb.GetTodosRequest(session_id=session), timeout=HANG_GUARD).todos
    assert list(got) == list(reply.todos)
    replaced = stub.SetTodos(
        pb.SetTodosRequest(session_id=session, todos=[pb.Todo(id="3", content="ship", status="completed", priority="low")]),
        timeout=HANG_GUARD,
    )
    assert [t.id for t in replaced.todos] == ["3"]
    assert [t.id for t in stub.GetTodos(pb.GetTodosRequest(session_id=session), timeout=HANG_GUARD).todos] == ["3"]


def test_bad_todos_are_refused_naming_the_field(gantry, mock_llm):
    pb, stub = gantry.pb, gantry.stub
    session = gantry.session(mock_llm([]))
    cases = [
        ([pb.Todo(id="1", content="x", status="done")], "todos[0].status"),
        ([pb.Todo(id="1", content="x", priority="urgent")], "todos[0].priority"),
        ([pb.Todo(id="1", content="x"), pb.Todo(id="1", content="y")], "todos[1].id"),
        ([pb.Todo(id="1")], "todos[0].content"),
    ]
    for todos, field in cases:
        code, details = code_of(lambda: stub.SetTodos(pb.SetTodosRequest(session_id=session, todos=todos), timeout=HANG_GUARD))
        assert code == grpc.StatusCode.INVALID_ARGUMENT and details.startswith(field + ":"), details
    assert not stub.GetTodos(pb.GetTodosRequest(session_id=session), timeout=HANG_GUARD).todos
    code, _ = code_of(lambda: stub.GetTodos(pb.GetTodosRequest(session_id="nope"), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.NOT_FOUND
