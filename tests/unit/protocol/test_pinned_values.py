"""An argument that takes values the question names is offered only those (the strict policy)."""

from __future__ import annotations

from langchain_core.tools import StructuredTool
from pydantic import BaseModel, Field

from reactgraph.protocol.action_schema import pin_named_values, tool_args_schema, value_schema


class _Booking(BaseModel):
    reference: str = Field(description="The booking reference, like QX-4821.", pattern=r"^QX-\d{4}$")
    cabin: str = Field(description="economy, business or first",
                       json_schema_extra={"enum": ["economy", "business", "first"]})
    passenger: str = Field(description="The passenger's e-mail.", json_schema_extra={"format": "email"})


class _Search(BaseModel):
    query: str = Field(description="Words of the destination.")


def booking(reference: str, cabin: str, passenger: str) -> str:
    """One flight booking."""
    return reference


def search_flights(query: str) -> str:
    """Search flights by destination."""
    return query


def test_an_argument_is_pinned_to_the_values_the_question_names():
    tool = StructuredTool.from_function(booking, args_schema=_Booking)
    pinned = pin_named_values(tool_args_schema(tool), value_schema(tool),
                              ["QX-0977", "business", "ana.lima@viagem.example.br"])
    properties = pinned["properties"]
    assert properties["reference"]["enum"] == ["QX-0977"] and "pattern" not in properties["reference"]
    assert properties["cabin"]["enum"] == ["business"]
    assert properties["passenger"]["enum"] == ["ana.lima@viagem.example.br"]


def test_free_text_a_yearless_date_and_unnamed_values_are_left_as_they_are():
    tool = StructuredTool.from_function(booking, args_schema=_Booking)
    assert pin_named_values(tool_args_schema(tool), value_schema(tool), ["--03-05", "Lisboa"]) == tool_args_schema(tool)
    search = StructuredTool.from_function(search_flights, args_schema=_Search)
    assert pin_named_values(tool_args_schema(search), value_schema(search), ["QX-0977"]) == tool_args_schema(search)
