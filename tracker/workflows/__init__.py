"""What follows what: a job that ended, a stored run or a finished round, chained to detection, bisection and the bot.

May import: github, views and everything below them.
"""
