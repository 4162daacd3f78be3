"""Every prompt file's ``prompts.prompt_hash`` (``prompts/*.md``), by name (sorted), in a leaf
module: what a run's signature records for the prompts a process did not read
(``prompts.prompt_hashes``), read without importing the prompts package, so that a fresh process's
first run without a judge reads and hashes no prompt file. ``tests/test_prompts_files.py`` checks
it against the files (and prints the table to write here when a prompt was added, removed or
changed)."""

HASHES: dict[str, str] = {
    "agent_goal_compare": "3fcd4f15bb05e746",
    "agent_goal_outcome": "86b4606401f4eda1",
    "answer_accuracy_rater1": "5d86beb1a2293218",
    "answer_accuracy_rater2": "d74371bb9717d56a",
    "answer_correctness": "75375b127ea0f88f",
    "answer_correctness_output": "ae9cc7abc8e1e75f",
    "answer_relevance": "ff177ad531930358",
    "claim_decomposition": "eee5a8b802aaac51",
    "classify": "23ebd87db3fefb80",
    "context_precision": "7f9360649edcb4d6",
    "context_quality": "b476c2c5c7ee698e",
    "context_rating_direct": "9c2e595f757fee66",
    "context_rating_second": "e418d95b5ca75c8f",
    "context_recall": "4613aeb467b0e1b5",
    "context_relevance": "87ed09e56be94202",
    "correctness_classification": "0dd45113833cc997",
    "custom": "faf68f32ceaf61c4",
    "entities": "e205fc4bc95927f1",
    "faithfulness_statements": "4e5165fd8b649c25",
    "faithfulness_verdicts": "d4950ab419ba612a",
    "geval": "60888b8fcee2071f",
    "groundedness_rater1": "36575125aa722bf4",
    "groundedness_rater2": "0d1c36b362def72c",
    "relevance_rubric": "8468b52b38651f81",
    "rubric_score": "39d42da83611dcf0",
    "sql_equivalence": "1b3d69cbf6db8274",
    "statements_support": "ab968945f6c492b3",
    "summary_answers": "acd77381bca5a9c8",
    "summary_keyphrases": "d2ea2d1f0bd86698",
    "summary_questions": "33e11223c4511c36",
    "topic_classification": "c7a0fc8a78c517bb",
    "topic_extraction": "ca3037ef79d2c79f",
    "topic_refused": "fabd6abe03e074dc",
    "trajectory_judgement": "4f85bc8b68b4a525",
    "trajectory_judgement_free": "ad7ab9d01212e111",
    "trajectory_llm": "64eee8aab870c149",
}
