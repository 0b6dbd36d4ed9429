"""A held-out recall set for long-term memory: facts of three users and, for each fact, a
query that asks for it in other words (as an agent asks before a task), plus a Chinese
set of one user.

Written for this benchmark, not taken from any data set: each user holds 16 facts of
one life (work, home, tools, plans), some of them near each other on purpose (two
meetings, two languages, two pets), so that a query must find the right one among
alike facts, not merely the one on its topic. A query shares few words with its fact
(and never all of them): a paraphrase, a question or a request, as the agent would
phrase it. ``benchmarks.recall`` measures recall@1, recall@3 and MRR over it.
"""

# ruff: noqa: RUF001 - the Chinese set is written with Chinese punctuation
from __future__ import annotations

from typing import Final

USERS: Final[dict[str, tuple[tuple[str, str], ...]]] = {
    "alice": (
        (
            "Alice prefers TypeScript over JavaScript for new projects",
            "which language should I pick for Alice's next project?",
        ),
        (
            "Alice's team standup is every Tuesday at 9:30",
            "when does Alice meet her team each week?",
        ),
        ("Alice works from home on Fridays", "where is Alice at the end of the week?"),
        ("Alice is allergic to peanuts", "what food must Alice avoid?"),
        ("Alice's manager is Priya Raman", "who does Alice report to?"),
        ("Alice drives a blue Volvo estate", "what car does Alice have?"),
        ("Alice's daughter Mia plays the violin", "which instrument does Alice's child learn?"),
        (
            "Alice runs the Berlin half marathon every April",
            "which race does Alice enter each spring?",
        ),
        ("Alice keeps her notes in Obsidian", "what app does Alice write things down in?"),
        (
            "Alice's laptop is a 14-inch ThinkPad running Fedora",
            "what computer and operating system does Alice use?",
        ),
        ("Alice does not drink coffee, only green tea", "what should I offer Alice to drink?"),
        (
            "Alice's birthday is on the 12th of August",
            "when should I wish Alice many happy returns?",
        ),
        ("Alice speaks German and Portuguese fluently", "which foreign tongues does Alice know?"),
        ("Alice's cat is called Pixel", "what is the name of Alice's pet?"),
        (
            "Alice reviews pull requests every morning before lunch",
            "when does Alice look at code changes?",
        ),
        ("Alice is planning a trip to Kyoto in October", "where is Alice travelling this autumn?"),
    ),
    "bob": (
        ("Bob's nightly database backup runs at 2 am", "when is Bob's data copied each night?"),
        ("Bob uses Vim with a dark colour scheme", "which editor does Bob code in?"),
        ("Bob is vegetarian and eats no fish", "what diet does Bob follow?"),
        ("Bob's dog Rex needs a walk at 7 every evening", "when must Bob take his pet out?"),
        ("Bob supports the Chicago Cubs", "which baseball club does Bob cheer for?"),
        (
            "Bob deploys the billing service on Thursdays",
            "which day does Bob ship the payments code?",
        ),
        ("Bob's office is on the fourth floor, room 412", "where can I find Bob's desk?"),
        ("Bob is learning Japanese on weekends", "what language is Bob studying?"),
        (
            "Bob prefers short written updates to meetings",
            "how does Bob like to get status reports?",
        ),
        ("Bob's mother lives in Lisbon", "in which city does Bob's mum live?"),
        ("Bob cycles to work when it is not raining", "how does Bob commute on dry days?"),
        (
            "Bob is on call for the payments team in the first week of each month",
            "when does Bob carry the pager?",
        ),
        ("Bob plays bass guitar in a jazz trio", "what instrument does Bob perform with?"),
        (
            "Bob's favourite restaurant is a Sichuan place called Red Lantern",
            "where should I book dinner with Bob?",
        ),
        ("Bob wears a size 44 shoe", "what is Bob's foot size?"),
        ("Bob moved from Toronto to Denver in 2021", "where did Bob live before?"),
    ),
    "carol": (
        (
            "Carol manages the warehouse robots on the night shift",
            "what does Carol do at work after dark?",
        ),
        (
            "Carol's forklift licence expires in June 2027",
            "when must Carol renew her permit to drive a lift truck?",
        ),
        (
            "Carol is training for a climbing trip to Patagonia",
            "what adventure is Carol getting fit for?",
        ),
        ("Carol cannot eat gluten", "what should Carol's meals leave out?"),
        ("Carol's son Leo starts school in September", "when does Carol's boy begin classes?"),
        ("Carol writes her reports in LaTeX", "what does Carol typeset documents with?"),
        ("Carol prefers the aisle seat on flights", "where does Carol like to sit on a plane?"),
        (
            "Carol's car is an electric Kia that she charges at home",
            "how does Carol power her vehicle?",
        ),
        ("Carol keeps bees in her back garden", "what is Carol's hobby in the yard?"),
        (
            "Carol's quarterly safety audit is due on March 31",
            "when is Carol's inspection deadline?",
        ),
        ("Carol reads crime novels on the train", "what books does Carol enjoy on her commute?"),
        (
            "Carol's team uses Grafana dashboards to watch the fleet",
            "which tool shows Carol the robots' status?",
        ),
        ("Carol grew up in a small town in Wales", "where is Carol from originally?"),
        ("Carol takes her holidays in the second half of July", "when is Carol away in summer?"),
        ("Carol is allergic to cats", "which animal gives Carol a reaction?"),
        (
            "Carol wants the robots' battery threshold raised to 30 percent",
            "what charge level does Carol ask the robots to keep?",
        ),
    ),
}
"""Each user's (fact, query) pairs: 48 facts, each query asking for its fact."""

CHINESE: Final[tuple[tuple[str, str], ...]] = (
    ("张伟每周二上午九点开部门例会", "张伟的部门例会是什么时候？"),
    ("张伟喜欢用Python写数据分析脚本", "张伟做数据分析用什么语言？"),
    ("张伟的女儿在学钢琴", "张伟的孩子学什么乐器？"),
    ("张伟对花生过敏", "张伟不能吃什么东西？"),
    ("张伟每天骑自行车上班", "张伟怎么去公司？"),
    ("张伟计划十月去成都旅游", "张伟秋天要去哪里玩？"),
    ("张伟的经理是李娜", "张伟的上级是谁？"),
    ("张伟住在上海浦东新区", "张伟家在哪个区？"),
    ("张伟的生日是八月十二日", "张伟哪天过生日？"),
    ("张伟不喝咖啡，只喝绿茶", "给张伟准备什么饮料？"),
    ("张伟的车是一辆白色的电动汽车", "张伟开什么车？"),
    ("张伟负责仓库机器人的夜班调度", "张伟晚上负责什么工作？"),
)
"""One user's (fact, query) pairs in Chinese."""
